"""The trajectory-attribution release (chenjing-2024/agent-trajectory-attribution, 1,351 cases) as records.

Layout: ``data/cases/<source>/<target_type>/<case_id>/{trajectory.json, annotation.json, metadata.json}``;
the path given may be the repository, ``data/cases``, one source or target-type folder, or one case.

Components differ by source, so they are indexed by their id *string* and ordered by list position:

- ``agentdojo``: ``trajectory[]`` entries carry no id; ``components_metadata[i].component_id`` is an int,
  1-based (system message C1, user prompt C2), matched to ``trajectory[i]`` by position.
- ``agent3sigma_stage``: ``trajectory[]`` entries carry ``"C1"``...; a leading empty system message has
  no id and is kept as a ``system`` step that is not a component.
- ``agent3sigma_canary``: the same, 0-based (the first user message is ``"C0"``).

One record per case; one step per ``trajectory[]`` entry (an ``action_result_pair``, a tool call merged
with its result, is one step of kind ``agent``). The gold step is the primary component's position;
``record.components`` holds target, primary and chains, validated by
:func:`failforge.attribution._components.check_label` (a case breaking a chain rule is reported, naming the
rule, and skipped). Annotations are CC BY 4.0; trajectories keep their upstream licences (MIT, Apache-2.0).

``task.question`` is the first user component without AgentDojo's ``[STANDALONE COMPONENT]`` header block
(what a judge should read as the task); the step keeps the released text. ``record.extra["release"]`` keeps
the three files as read (each entry's text once, on its step), so the exporter writes them back field for
field: trajectory id, summaries, evidence, ``source_metadata``, a null ``source_suite``, AgentDojo's int ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from failforge.attribution._components import ChainError, ComponentLabel, check_label
from failforge.attribution._record import FailureStep, Gold, LabelledFailure, Origin, RecordProblem, TaskInfo
from failforge.attribution.importers._common import Skip, text_of
from failforge.errors import ConfigError, SeedFormatError
from failforge.jsonl import read_json
from failforge.plugins import importers

FILES = ("trajectory.json", "annotation.json", "metadata.json")
#: AgentDojo's components open with a header block (``[STANDALONE COMPONENT]`` then ``key: value`` lines, a blank line).
STANDALONE = "[STANDALONE COMPONENT]\n"
_KINDS: dict[str, Literal["system", "user", "agent", "tool"]] = {
    "system": "system",
    "user": "user",
    "assistant": "agent",
    "tool": "agent",
}


def case_folders(root: Path) -> list[Path]:
    """Every case folder under ``root`` (a folder holding ``annotation.json``), sorted by path."""
    if not root.is_dir():
        raise ConfigError(f"{root}: no such folder (give the release, data/cases, a source folder or one case)")
    if (root / "annotation.json").exists():
        return [root]
    return sorted(p.parent for p in root.rglob("annotation.json"))


def _cid(value: Any, field: str) -> str:
    if isinstance(value, bool) or value is None:
        raise Skip(field, f"expected a component id, found {value!r}")
    if isinstance(value, int):
        return f"C{value}"
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise Skip(field, f"expected a component id, found {value!r}")


def _label_id(value: Any, field: str) -> str:
    if isinstance(value, dict):
        value = value.get("component_id")
    if not isinstance(value, str) or not value:
        raise Skip(field, "missing" if value is None else f"expected a 'C<n>' string, found {value!r}")
    return value


def _chain(value: Any, field: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise Skip(field, f"expected a list of component ids, found {type(value).__name__}")
    return [_label_id(v, f"{field}[{i}]") for i, v in enumerate(value)]


def component_ids(entries: list[Any], meta: list[Any]) -> list[str | None]:
    """Each ``trajectory[]`` entry's component id (None: not a component), by the source's convention."""
    if any(isinstance(e, dict) and "component_id" in e for e in entries):
        return [
            (
                _cid(e["component_id"], f"trajectory[{i}].component_id")
                if isinstance(e, dict) and "component_id" in e
                else None
            )
            for i, e in enumerate(entries)
        ]
    if len(meta) != len(entries):
        raise Skip(
            "components_metadata",
            f"{len(meta)} entries for {len(entries)} trajectory entries, and the entries carry no component_id",
        )
    return [
        _cid(m.get("component_id") if isinstance(m, dict) else None, f"components_metadata[{i}].component_id")
        for i, m in enumerate(meta)
    ]


def question_of(text: str) -> str:
    """The task as the judge should read it: an AgentDojo ``[STANDALONE COMPONENT]`` header block (group id,
    types, ``function: None``...) stripped; any other text verbatim. The step keeps the released text."""
    if text.startswith(STANDALONE) and "\n\n" in text:
        return text.split("\n\n", 1)[1]
    return text


def release_copy(
    trajectory: dict[str, Any], annotation: dict[str, Any], metadata: dict[str, Any], steps: list[FailureStep]
) -> dict[str, Any]:
    """What the exporter needs to write the three files back as released (``record.extra["release"]``):
    the files as read, except that a ``trajectory[i].content`` string equal to step i's text is kept once,
    on the step (set to None here, its index listed in ``content_from_steps``; key order is kept)."""
    entries = []
    from_steps = []
    for i, (entry, step) in enumerate(zip(trajectory["trajectory"], steps, strict=True)):
        if isinstance(entry.get("content"), str) and entry["content"] == step.content:
            entry = {k: None if k == "content" else v for k, v in entry.items()}
            from_steps.append(i)
        entries.append(entry)
    return {
        "trajectory": {k: entries if k == "trajectory" else v for k, v in trajectory.items()},
        "content_from_steps": from_steps,
        "annotation": annotation,
        "metadata": metadata,
    }


def read_case(folder: Path, trajectory: Any, annotation: Any, metadata: Any) -> LabelledFailure:
    for name, data in zip(FILES, (trajectory, annotation, metadata), strict=True):
        if not isinstance(data, dict):
            raise Skip(name, f"expected a JSON object, found {type(data).__name__}")
    entries = trajectory.get("trajectory")
    if not isinstance(entries, list) or not entries:
        raise Skip("trajectory.json:trajectory", "missing or empty")
    meta = trajectory.get("components_metadata") or []
    if not isinstance(meta, list):
        raise Skip("trajectory.json:components_metadata", f"expected a list, found {type(meta).__name__}")
    ids = component_ids(entries, meta)
    meta_by_id = {
        _cid(m.get("component_id"), "components_metadata.component_id"): m
        for m in meta
        if isinstance(m, dict) and m.get("component_id") is not None
    }
    steps: list[FailureStep] = []
    for i, (entry, cid) in enumerate(zip(entries, ids, strict=True)):
        if not isinstance(entry, dict) or not isinstance(entry.get("role"), str):
            raise Skip(f"trajectory[{i}].role", "missing")
        role = entry["role"]
        m = meta_by_id.get(cid, {}) if cid else {}
        ctype = (
            m.get("component_type")
            or m.get("type")
            or ({"system": "system_message", "user": "user_message"}.get(role, "assistant_message") if cid else None)
        )
        steps.append(
            FailureStep(
                index=i,
                kind=_KINDS.get(role, "agent"),
                agent=role if role in ("system", "user") else "assistant",
                role=role,
                content=text_of(entry.get("content")),
                component=cid,
                component_type=ctype,
            )
        )
    case_id = str(annotation.get("case_id") or folder.name)
    target_type = annotation.get("target_type") or trajectory.get("target_type")
    if not isinstance(target_type, str):
        raise Skip("annotation.json:target_type", "missing")
    chains = annotation.get("chains") or {}
    if not isinstance(chains, dict):
        raise Skip("annotation.json:chains", f"expected an object, found {type(chains).__name__}")
    label = ComponentLabel(
        target_type=target_type,
        target=_label_id(annotation.get("target"), "annotation.json:target.component_id"),
        primary=_label_id(annotation.get("primary_attribution"), "annotation.json:primary_attribution.component_id"),
        attack_chain=_chain(chains.get("attack"), "annotation.json:chains.attack"),
        execution_chain=_chain(chains.get("execution"), "annotation.json:chains.execution"),
        attributes=dict(annotation.get("attributes") or {}),
    )
    order = [c for c in ids if c is not None]
    try:
        check_label(order, label)
    except ChainError as exc:
        raise Skip(f"annotation.json:{exc.field}", f"case {case_id}: {exc.problem}") from None
    primary_at = next(s.index for s in steps if s.component == label.primary)
    source = str(metadata.get("source_benchmark") or trajectory.get("source_benchmark") or folder.parent.parent.name)
    question = question_of(next((s.content for s in steps if s.kind == "user"), ""))
    provenance = metadata.get("provenance") if isinstance(metadata.get("provenance"), dict) else {}
    extra: dict[str, Any] = {
        "case_id": case_id,
        "trajectory_id": annotation.get("trajectory_id") or trajectory.get("trajectory_id"),
        "source_suite": metadata.get("source_suite"),
        "quality": annotation.get("quality"),
        "provenance": provenance,
    }
    if isinstance(trajectory.get("source_metadata"), dict):
        sm = trajectory["source_metadata"]
        extra["source_metadata"] = {
            k: sm.get(k)
            for k in (
                "suite_name",
                "pipeline_name",
                "user_task_id",
                "injection_task_id",
                "attack_type",
                "utility",
                "security",
            )
            if k in sm
        }
    if isinstance(provenance.get("failforge_label"), dict):
        extra["failforge_label"] = provenance["failforge_label"]
    extra["release"] = release_copy(trajectory, annotation, metadata, steps)
    return LabelledFailure(
        id=f"trajectory_attribution/{source}/{case_id}",
        source=f"trajectory_attribution/{source}/{target_type}",
        framework=str((trajectory.get("source_metadata") or {}).get("pipeline_name") or source),
        benchmark=source,
        topology="single",
        agents=["assistant"],
        task=TaskInfo(question=question),
        steps=steps,
        gold=Gold(agent=None, step=primary_at, step_label=label.primary),
        origin=Origin(
            format="trajectory-attribution",
            path=str(folder),
            row_id=case_id,
            step_convention=(
                "one step per trajectory[] entry (an action_result_pair is one step); gold.step is the primary"
                " component's position; component ids kept as the source writes them"
            ),
        ),
        extra=extra,
        components=label,
    )


@importers.register(
    "trajectory-attribution",
    description="chenjing-2024/agent-trajectory-attribution: data/cases/<source>/<target_type>/<case_id>/",
)
def import_trajectory_attribution(path: Path) -> Iterator[LabelledFailure | RecordProblem]:
    for folder in case_folders(Path(path)):
        loaded: list[Any] = []
        try:
            for name in FILES:
                file = folder / name
                if not file.exists():
                    raise Skip(name, "missing from the case folder")
                if file.is_symlink() and not file.resolve().is_relative_to(folder.resolve()):
                    raise Skip(name, "a symbolic link out of the case folder; not read")
                loaded.append(read_json(file))  # a FIFO or a device is refused before it is opened
            yield read_case(folder, *loaded)
        except Skip as skip:
            yield skip.at(str(folder))
        except SeedFormatError as exc:
            yield RecordProblem.of(exc)
        except ConfigError as exc:
            yield RecordProblem(path=str(folder), field="<file>", problem=str(exc))
        except ValueError as exc:
            yield RecordProblem(path=str(folder), field="<record>", problem=" ".join(str(exc).split())[:300])
