"""Export gold records in the trajectory-attribution release's layout (chenjing-2024/agent-trajectory-attribution).

Writes ``<out>/data/cases/<source>/<target_type>/<case_id>/{trajectory.json, annotation.json, metadata.json}``
with the release's fields, so the release's readers and failforge's importer read it unchanged.

How failforge's one component per step becomes the release's components (the release merges a tool call
and its result into one ``action_result_pair``):

- the task (step 0) is a ``user_message``; an agent step with no tool call is an ``assistant_message``;
- an agent step with tool calls gives one ``action_result_pair`` per call, each merged with the tool step
  answering that call (matched by ``tool_call_id``); the agent's text goes into the first pair; a tool
  step no call claims is a pair of its own;
- release ids are ``"C1"``, ``"C2"``... (1-based strings on every ``trajectory[]`` entry, Stage's style),
  in position order; ``components_metadata[].original_step_ids`` lists the failforge steps merged into
  each component and ``failforge_components`` their failforge ids;
- a failforge component id maps to the release component holding its step (an agent step with several
  calls: its first pair); chains are mapped, de-duplicated, stripped of the primary and the target and
  sorted. An injected observation (failforge's primary) and the call that fetched it become one pair,
  which is how the release's AgentDojo cases label it (ad_ua_0001: primary C3 = read_file + its result).
- target types: failforge's ``unsafe_action`` and ``unsafe_completion`` -> ``unsafe_action``;
  ``over_refusal`` -> ``safety_refusal``; ``failure`` (an agent's own error) has no release target type
  and is skipped with a reason, as is a record whose label names no target or primary component.

The chain rules are checked on every record written, on failforge's ids and on the mapped ids; a record
that breaks one is skipped, naming the rule. ``metadata.json``'s provenance keeps the failforge label
(``failforge_label``), so importing the export gives back target, primary and chains exactly; a re-imported
case that is relabelled and exported again drops it (it is in failforge's per-step ids, which the
re-imported case no longer has, and would contradict the new annotation).
Records that came from the release itself are written back as released (:func:`as_released`): the three
files the importer kept in ``record.extra["release"]``, the steps' texts and the record's label put back, so
import -> export gives the released files field for field (and key order). Such records imported before
the release copy existed are written from their steps, with the release's trajectory id and source suite.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from failforge.attribution import ChainError, ComponentLabel, FailureStep, LabelledFailure, RecordProblem, check_label
from failforge.exporters._common import ExportSummary, as_records, check_codes, safe_name, unique_names
from failforge.plugins import exporters
from failforge.trajectory import Trajectory

TARGET_TYPES = {
    "unsafe_action": "unsafe_action",
    "unsafe_completion": "unsafe_action",
    "over_refusal": "safety_refusal",
    "task_aligned_action": "task_aligned_action",
    "safety_refusal": "safety_refusal",
}


class _Skip(Exception):
    def __init__(self, field: str, problem: str) -> None:
        super().__init__(problem)
        self.field = field
        self.problem = problem


def _group(members: list[FailureStep], call: Any | None) -> dict[str, Any]:
    first = members[0]
    if first.kind == "user":
        return {"role": "user", "type": "user_message", "content": first.content, "members": members}
    if first.kind == "system":
        return {"role": "system", "type": "system_message", "content": first.content, "members": members}
    if first.kind == "agent" and call is None:
        return {"role": "assistant", "type": "assistant_message", "content": first.content, "members": members}
    parts = []
    if first.kind == "agent" and first.content:
        parts.append(first.content)
    if call is not None:
        parts.append(f"Tool: {call.name}\nArguments:\n{call.arguments}")
    result = next((m for m in members if m.kind == "tool"), None)
    parts.append(f"Result:\n{result.content}" if result is not None else "Result:\n(no result recorded)")
    return {
        "role": "tool",
        "type": "action_result_pair",
        "content": "\n".join(parts),
        "members": members,
        "tool_name": call.name if call is not None else (result.agent if result else None),
        "arguments": call.arguments if call is not None else None,
    }


def merge(record: LabelledFailure) -> list[dict[str, Any]]:
    """The release components of a failforge record, in position order (see the module docstring)."""
    answered: dict[str, FailureStep] = {s.tool_call_id: s for s in record.steps if s.kind == "tool" and s.tool_call_id}
    used: set[int] = set()
    keyed: list[tuple[tuple[int, int], dict[str, Any]]] = []
    for step in record.steps:
        if step.kind == "agent" and step.tool_calls:
            for j, call in enumerate(step.tool_calls):
                answer = answered.get(call.id or "")
                members = [step] if answer is None or answer.index in used else [step, answer]
                used.update(m.index for m in members)
                content_step = step if j == 0 else step.model_copy(update={"content": ""})
                keyed.append(((step.index, j), _group([content_step, *members[1:]], call) | {"members": members}))
    for step in record.steps:
        if step.index not in used and not (step.kind == "agent" and step.tool_calls):
            keyed.append(((step.index, 0), _group([step], None)))
    keyed.sort(key=lambda kv: kv[0])
    groups = [g for _, g in keyed]
    for n, group in enumerate(groups, start=1):
        group["id"] = f"C{n}"
    return groups


def map_label(record: LabelledFailure, groups: list[dict[str, Any]]) -> ComponentLabel:
    label = record.components
    assert label is not None
    where: dict[str, str] = {}
    for group in groups:
        for member in group["members"]:
            if member.component is not None:
                where.setdefault(member.component, group["id"])
    order = [g["id"] for g in groups]

    def one(cid: str, field: str) -> str:
        if cid not in where:
            raise _Skip(field, f"{cid} is not a component of the record")
        return where[cid]

    target, primary = one(label.target, "target"), one(label.primary, "primary")

    def chain(ids: list[str], field: str) -> list[str]:
        mapped = {one(c, field) for c in ids} - {target, primary}
        return sorted(mapped, key=order.index)

    return ComponentLabel(
        target_type=TARGET_TYPES[label.target_type],
        target=target,
        primary=primary,
        attack_chain=chain(label.attack_chain, "chains.attack"),
        execution_chain=chain(label.execution_chain, "chains.execution"),
        attributes={
            "attack_success": label.attributes.get("attack_success"),
            "risk_category": label.attributes.get("risk_category"),
        },
    )


def _passthrough(record: LabelledFailure) -> list[dict[str, Any]]:
    return [
        {
            "id": s.component,
            "role": s.role or ("assistant" if s.kind == "agent" else s.kind),
            "type": s.component_type,
            "content": s.content,
            "members": [s],
        }
        for s in record.steps
    ]


def as_released(
    record: LabelledFailure, label: ComponentLabel, case_id: str
) -> tuple[str, str, dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A record imported from the release, written back as released: the three files the importer kept in
    ``record.extra["release"]``, with the steps' texts put back into ``trajectory[]`` and the record's label
    (target type, target, primary, chains, attributes) over the annotation's, so a relabelled record writes
    its new label and an unchanged one writes the released files field for field. ``case_id`` differs from
    the release's only when two records would share a folder (see ``unique_names``)."""
    kept = copy.deepcopy(record.extra["release"])
    trajectory, annotation, metadata = kept.get("trajectory"), kept.get("annotation"), kept.get("metadata")
    if not (
        isinstance(trajectory, dict)
        and isinstance(annotation, dict)
        and isinstance(metadata, dict)
        and isinstance(trajectory.get("trajectory"), list)
    ):
        raise _Skip(
            "extra.release",
            f"record {record.id}: the release copy is not the three files' objects (re-import the case)",
        )
    entries: list[Any] = trajectory["trajectory"]
    provenance = metadata.get("provenance")
    if (
        isinstance(provenance, dict)
        and "failforge_label" in provenance
        and _released_label(annotation) != _label_tuple(label)
    ):
        # The kept label is in failforge's per-step ids, which a re-imported case no longer has: a relabelled
        # record cannot restate it, and a stale one would contradict annotation.json. It is dropped.
        del provenance["failforge_label"]
    if len(entries) != len(record.steps):
        raise _Skip(
            "steps",
            f"record {record.id}: {len(record.steps)} steps, but the released trajectory has {len(entries)} entries"
            " (re-import the case)",
        )
    for i in kept.get("content_from_steps") or []:
        entries[i]["content"] = record.steps[i].content
    for obj in (
        trajectory,
        annotation,
        metadata,
    ):  # assigning an existing key keeps its place: the file's key order stays the release's
        if "case_id" in obj:
            obj["case_id"] = case_id
        if "target_type" in obj or obj is annotation:
            obj["target_type"] = label.target_type
    for key, cid in (("target", label.target), ("primary_attribution", label.primary)):
        part = annotation.get(key)
        if isinstance(part, dict):
            part["component_id"] = cid
        else:  # the importer also reads a bare id string
            annotation[key] = cid if isinstance(part, str) else {"component_id": cid, "summary": None, "evidence": None}
    chains: dict[str, Any] = annotation["chains"] if isinstance(annotation.get("chains"), dict) else {}
    for key, ids in (("attack", label.attack_chain), ("execution", label.execution_chain)):
        if chains.get(key) is not None or ids:  # a released null stays null while the chain is empty
            chains[key] = list(ids)
    annotation["chains"] = chains
    attributes: dict[str, Any] = annotation["attributes"] if isinstance(annotation.get("attributes"), dict) else {}
    attributes.update(label.attributes)
    annotation["attributes"] = attributes
    source = record.source.split("/")[1]
    return source, label.target_type, trajectory, annotation, metadata


def _label_tuple(label: ComponentLabel) -> tuple[Any, ...]:
    return (label.target_type, label.target, label.primary, list(label.attack_chain), list(label.execution_chain))


def _released_label(annotation: dict[str, Any]) -> tuple[Any, ...]:
    """The label ``annotation.json`` states, in the shape of :func:`_label_tuple` (a null chain reads as empty)."""

    def cid(part: Any) -> Any:
        return part.get("component_id") if isinstance(part, dict) else part

    found = annotation.get("chains")
    chains: dict[str, Any] = found if isinstance(found, dict) else {}
    return (
        annotation.get("target_type"),
        cid(annotation.get("target")),
        cid(annotation.get("primary_attribution")),
        list(chains.get("attack") or []),
        list(chains.get("execution") or []),
    )


def to_case(record: LabelledFailure, case_id: str) -> tuple[str, str, dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(source, target_type, trajectory.json, annotation.json, metadata.json) of one record."""
    label = record.components
    if label is None:
        raise _Skip("components", f"record {record.id}: its gold label names no target or primary component")
    if label.target_type not in TARGET_TYPES:
        raise _Skip(
            "components.target_type",
            f"record {record.id}: behaviour {label.target_type!r} has no target type in the release "
            f"(it has {', '.join(sorted(set(TARGET_TYPES.values())))})",
        )
    try:
        check_label(record.component_order(), label)
    except ChainError as exc:
        raise _Skip(exc.field, f"record {record.id}: {exc.problem}") from None
    native = record.origin.format == "trajectory-attribution"
    if native and isinstance(record.extra.get("release"), dict):
        return as_released(record, label, case_id)
    groups = _passthrough(record) if native else merge(record)
    mapped = label if native else map_label(record, groups)
    try:
        check_label([g["id"] for g in groups if g["id"] is not None], mapped)
    except ChainError as exc:
        raise _Skip(
            exc.field, f"record {record.id}: after merging tool calls with their results: {exc.problem}"
        ) from None
    source = record.source.split("/")[1] if native else safe_name(record.source.replace("/", "_"))
    entries, meta = [], []
    for order, g in enumerate(groups):
        entry = {"role": g["role"], "content": g["content"]}
        if g["id"] is not None:
            entry["component_id"] = g["id"]
            steps = [m.index for m in g["members"]]
            meta.append(
                {
                    "component_id": g["id"],
                    "order": order,
                    "type": g["type"],
                    "role": g["role"],
                    "tool_name": g.get("tool_name"),
                    "args": g.get("arguments"),
                    "content_full": g["content"],
                    "original_step_ids": steps,
                    "failforge_components": [m.component for m in g["members"] if m.component is not None],
                }
            )
        entries.append(entry)
    trajectory_id = str(record.extra.get("trajectory_id") or record.id) if native else record.id
    trajectory = {
        "schema_version": "1.0",
        "case_id": case_id,
        "trajectory_id": trajectory_id,
        "source_benchmark": source,
        "target_type": mapped.target_type,
        "trajectory": entries,
        "components_metadata": meta,
    }
    annotation = {
        "schema_version": "1.0",
        "case_id": case_id,
        "trajectory_id": trajectory_id,
        "target_type": mapped.target_type,
        "target": {"component_id": mapped.target, "summary": None, "evidence": None},
        "primary_attribution": {"component_id": mapped.primary, "summary": None, "evidence": None},
        "chains": {"attack": mapped.attack_chain, "execution": mapped.execution_chain},
        "attributes": {
            "attack_success": mapped.attributes.get("attack_success"),
            "risk_category": mapped.attributes.get("risk_category"),
        },
        "quality": {
            "confidence": {
                "overall": None,
                "target": None,
                "primary": None,
                "attack_chain": None,
                "execution_chain": None,
            },
            "needs_review": False,
            "review_reasons": [],
        },
    }
    provenance: dict[str, Any] = (
        dict(record.extra.get("provenance") or {})
        if native
        else {
            "original_data_id": record.id,
            "original_trajectory_id": record.extra.get("seed_id"),
            "original_trajectory_key": record.id,
            "annotation_method": "failforge_construction",
            "annotation_model": None,
            "rule_version": "failforge-components/1",
            "was_repaired": False,
            "original_case_id": record.id,
            "failforge_label": {
                "behaviour": label.target_type,
                "target": label.target,
                "primary": label.primary,
                "attack": list(label.attack_chain),
                "execution": list(label.execution_chain),
            },
        }
    )
    suite = (
        record.extra["source_suite"]
        if native and "source_suite" in record.extra
        else record.extra.get("source_suite") or record.benchmark
    )
    metadata = {
        "schema_version": "1.0",
        "case_id": case_id,
        "trajectory_id": trajectory_id,
        "source_benchmark": source,
        "source_suite": suite,
        "target_type": mapped.target_type,
        "files": {"trajectory": "trajectory.json", "annotation": "annotation.json"},
        "provenance": provenance,
    }
    return source, mapped.target_type, trajectory, annotation, metadata


@exporters.register(
    "trajectory-attribution",
    description="trajectory-attribution release layout: <out>/data/cases/<source>/<target_type>/<case_id>/",
)
def export_trajectory_attribution(
    items: Iterable[Trajectory | LabelledFailure], output: Path, codes: Literal["release", "failforge"] = "release"
) -> ExportSummary:
    check_codes(codes)
    records = as_records(items)
    summary = ExportSummary()
    names = unique_names(records, lambda r: safe_name(str(r.extra.get("case_id") or r.id)))
    for record, case_id in zip(records, names, strict=True):
        try:
            source, target_type, trajectory, annotation, metadata = to_case(record, case_id)
        except _Skip as skip:
            summary.skipped.append(
                RecordProblem(path=record.origin.path, line=record.origin.line, field=skip.field, problem=skip.problem)
            )
            continue
        folder = Path(output) / "data" / "cases" / source / target_type / case_id
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in (
            ("trajectory.json", trajectory),
            ("annotation.json", annotation),
            ("metadata.json", metadata),
        ):
            (folder / name).write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        summary.files.append(str(folder))
        summary.written += 1
    return summary
