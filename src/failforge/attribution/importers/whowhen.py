"""Who&When (ICML 2025): a folder of ``N.json`` logs, the layout its own ``Automated_FA`` scripts read.

Conventions (ag2ai/Agents_Failure_Attribution, ``Automated_FA/Lib/utils.py`` and ``evaluate.py``):

- ``history`` is the trajectory; a step is one ``history`` entry, 0-based (``Step {idx}`` in the
  step-by-step prompt), and ``mistake_step`` is a *string* holding that index.
- The agent of an entry is ``role`` in the Hand-Crafted half (Magentic-One labels such as
  ``"Orchestrator (-> WebSurfer)"``; ``mistake_agent`` is the bare name) and ``name`` in the
  Algorithm-Generated half (CaptainAgent; ``role`` is just user/assistant). The scripts switch on
  ``--is_handcrafted``; here each file is classified by its own entries: if every entry has ``name``
  it is read the Algorithm-Generated way.
- Hand-Crafted files have ``is_corrected`` (not ``is_correct``), an int ``level`` that 28 files lack,
  and no ``system_prompt``; Algorithm-Generated files map agent name -> system prompt.

A folder given directly is read as one half; a folder holding ``Hand-Crafted`` and/or
``Algorithm-Generated`` reads both. Files are taken in numeric order as the scripts do.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from failforge.attribution._record import FailureStep, Gold, LabelledFailure, Origin, RecordProblem, TaskInfo
from failforge.attribution.importers._common import Skip, bare_agent, int_step, recipient_of, require_str, text_of
from failforge.errors import ConfigError, SeedFormatError
from failforge.jsonl import read_json
from failforge.plugins import importers

HALVES = {"Hand-Crafted": "hand_crafted", "Algorithm-Generated": "algorithm_generated"}
TERMINALS = frozenset({"computer_terminal", "computerterminal"})
HUMANS = frozenset({"human", "user"})


def _numeric(path: Path) -> tuple[int, str]:
    digits = "".join(ch for ch in path.stem if ch.isdigit())
    return (int(digits) if digits else 0, path.name)


def log_files(root: Path) -> list[tuple[Path, str | None]]:
    """(file, half) pairs in the order the Who&When scripts read them."""
    if root.is_file():
        return [(root, None)]
    if not root.is_dir():
        raise ConfigError(f"{root}: no such file or folder")
    halves: list[tuple[Path, str | None]] = [
        (root / name, key) for name, key in HALVES.items() if (root / name).is_dir()
    ]
    folders = halves or [(root, HALVES.get(root.name))]
    out: list[tuple[Path, str | None]] = []
    for folder, half in folders:
        out.extend((f, half) for f in sorted(folder.glob("*.json"), key=_numeric))
    return out


def _step(index: int, entry: Any, named: bool) -> FailureStep:
    if not isinstance(entry, dict):
        raise Skip(f"history[{index}]", f"expected an object, found {type(entry).__name__}")
    raw_role = entry.get("role")
    if named:
        agent = entry.get("name")
        if not isinstance(agent, str):
            raise Skip(f"history[{index}].name", "missing")
        role_text = f"{raw_role}" if isinstance(raw_role, str) else ""
        recipient = None
    else:
        if not isinstance(raw_role, str):
            raise Skip(f"history[{index}].role", "missing")
        agent = bare_agent(raw_role)
        role_text = raw_role
        recipient = recipient_of(raw_role)
    low = agent.strip().lower()
    kind: Literal["user", "tool", "agent"] = "user" if low in HUMANS else "tool" if low in TERMINALS else "agent"
    return FailureStep(
        index=index,
        kind=kind,
        agent=agent,
        role=role_text,
        content=text_of(entry.get("content")),
        sender=agent if recipient else None,
        recipient=recipient,
    )


def read_log(path: Path, half: str | None, data: Any) -> LabelledFailure:
    if not isinstance(data, dict):
        raise Skip("<record>", f"expected a JSON object, found {type(data).__name__}")
    history = data.get("history")
    if not isinstance(history, list) or not history:
        raise Skip("history", "missing or empty")
    named = all(isinstance(e, dict) and isinstance(e.get("name"), str) for e in history)
    half = half or ("algorithm_generated" if named else "hand_crafted")
    steps = [_step(i, e, named) for i, e in enumerate(history)]
    question = require_str(data, "question")
    agent = require_str(data, "mistake_agent")
    raw_step = data.get("mistake_step")
    if raw_step is None:
        raise Skip("mistake_step", "missing")
    step = int_step(raw_step, "mistake_step")
    if not 0 <= step < len(steps):
        raise Skip("mistake_step", f"{raw_step!r} is outside history[0..{len(steps) - 1}]")
    warnings = []
    if not isinstance(raw_step, str):
        warnings.append(f"mistake_step is a {type(raw_step).__name__}, the dataset writes a string")
    if steps[step].agent != agent:
        warnings.append(f"history[{step}] is by {steps[step].agent!r}, the label names {agent!r}")
    prompts = data.get("system_prompt") if isinstance(data.get("system_prompt"), dict) else {}
    agents: list[str] = []
    for s in steps:
        if s.kind == "agent" and s.agent not in agents:
            agents.append(s.agent)
    if agent not in agents:
        agents.append(agent)
    qid = data.get("question_ID")
    extra = {
        k: data[k]
        for k in ("question_ID", "level", "is_correct", "is_corrected", "mistake_type", "labels")
        if k in data
    }
    return LabelledFailure(
        id=f"who_and_when/{half}/{path.stem}",
        source=f"who_and_when/{half}",
        framework="magentic-one" if half == "hand_crafted" else "captain-agent",
        topology="multi",
        modality="text",
        agents=agents,
        task=TaskInfo(
            question=question,
            gold_answer=text_of(data.get("ground_truth", data.get("groundtruth"))) or None,
            system_prompts={str(k): text_of(v) for k, v in (prompts or {}).items()},
        ),
        steps=steps,
        gold=Gold(
            agent=agent,
            step=step,
            mode=None,
            source_mode=None,
            step_label=str(raw_step),
            rationale=text_of(data.get("mistake_reason")) or None,
        ),
        origin=Origin(
            format="whowhen",
            path=str(path),
            row_id=str(qid) if qid is not None else None,
            step_convention="one history entry = one step; mistake_step is the 0-based history index",
            warnings=warnings,
        ),
        extra=extra,
    )


@importers.register(
    "whowhen", description="Who&When: a folder of N.json logs (Hand-Crafted and/or Algorithm-Generated)"
)
def import_whowhen(path: Path) -> Iterator[LabelledFailure | RecordProblem]:
    for file, half in log_files(Path(path)):
        try:
            data = read_json(file)
        except SeedFormatError as exc:
            yield RecordProblem.of(exc)
            continue
        except ConfigError as exc:
            yield RecordProblem(path=str(file), field="<file>", problem=str(exc))
            continue
        try:
            yield read_log(file, half, data)
        except Skip as skip:
            yield skip.at(str(file))
        except ValueError as exc:  # the record's own consistency checks
            yield RecordProblem(path=str(file), field="<record>", problem=re.sub(r"\s+", " ", str(exc))[:300])
