"""A run saved from a smolagents CodeAgent, made a DA-Bench seed (``failforge import RUN --format smolagents``).

Accepted shape (a ``.json`` file holding one run, or a ``.jsonl`` file with one run per line)::

    {"steps": [<agent.memory.get_full_steps() or get_succinct_steps()>],   # required
     "model": "model id",                                                   # optional, recorded as the seed's model
     "source": "where the run came from"}                                   # optional, kept in provenance

``steps`` is smolagents' own serialisation of ``agent.memory.steps``: a ``TaskStep`` (``{"task": ...}``) first, then
``ActionStep`` dicts, of which failforge reads ``model_output`` (the model's text), ``code_action``,
``observations``, ``error`` (``{"type", "message"}``), ``action_output`` and ``is_final_answer``. ``PlanningStep``
dicts are refused (a planning CodeAgent is not replayed here). In a ``.json`` file a bare list of steps is
accepted too (a ``.jsonl`` line must be an object).

It becomes a seed when (1) its task names one DA-Bench question (the question's text and its table's file name
both occur in the task), (2) its final answer (the ``action_output`` of the step with ``is_final_answer``) passes
the closed-form evaluator, and (3) re-executing it reproduces every observation: the run's model outputs are
played, in order, to failforge's ``smolagents.code`` harness (smolagents' own CodeAgent) on the question's
stateful interpreter, and each code step's observation as smolagents wrote it (``Execution logs:`` ...
``Last output from code snippet:`` ..., or the error message) must equal the saved one, byte for byte. The
recorded seed carries the requests failforge's harness sent (with failforge's task prompt; the run's own task
text is kept in provenance) and replays like any seed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from failforge.canonical import readable_diff
from failforge.errors import ConfigError, SeedFormatError
from failforge.jsonl import read_json, read_jsonl
from failforge.trajectory import ComponentSpec, Step, Trajectory

FORMAT = "smolagents"


class SavedAction(BaseModel):
    """One smolagents ``ActionStep`` as ``step.dict()`` writes it (the fields failforge reads)."""

    model_config = ConfigDict(extra="ignore")

    step_number: int | None = None
    model_output: str | None = None
    code_action: str | None = None
    observations: str | None = None
    error: dict[str, Any] | None = None
    action_output: Any = None
    is_final_answer: bool = False


class SavedRun(BaseModel):
    model_config = ConfigDict(extra="ignore")

    task: str
    actions: list[SavedAction]
    model: str = "imported-smolagents-run"
    source: str = ""

    @property
    def final_answer(self) -> str | None:
        done = [a for a in self.actions if a.is_final_answer]
        return None if not done or done[-1].action_output is None else str(done[-1].action_output)


class ImportVerdict(BaseModel):
    """What became of one saved run: the seed, or why not."""

    source: str
    question: str | None = None
    seed: Trajectory | None = None
    reasons: list[str] = Field(default_factory=list)


def parse_run(raw: Any, where: str) -> SavedRun:
    """A saved run from its JSON (``{"steps": [...]}`` or a bare list); a one-line error naming what is wrong."""
    if isinstance(raw, list):
        raw = {"steps": raw}
    if not isinstance(raw, dict) or not isinstance(raw.get("steps"), list) or not raw["steps"]:
        raise SeedFormatError(where, 0, "steps", "expected smolagents' memory steps (a non-empty list)")
    steps = raw["steps"]
    first = steps[0]
    if not isinstance(first, dict) or not isinstance(first.get("task"), str):
        raise SeedFormatError(where, 0, "steps[0].task", "the first step must be smolagents' TaskStep ({'task': ...})")
    actions = []
    for number, step in enumerate(steps[1:], start=1):
        if not isinstance(step, dict):
            raise SeedFormatError(where, 0, f"steps[{number}]", "expected an object")
        if "plan" in step:
            raise SeedFormatError(where, 0, f"steps[{number}]", "a PlanningStep; runs with planning are not imported")
        if "task" in step:
            raise SeedFormatError(where, 0, f"steps[{number}]", "a second task; save one run per record")
        try:
            actions.append(SavedAction.model_validate(step))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"])
            raise SeedFormatError(
                where, 0, f"steps[{number}].{field}", f"{first['msg']} (found {type(first['input']).__name__})"
            ) from None
    return SavedRun(
        task=first["task"],
        actions=actions,
        model=str(raw.get("model") or "imported-smolagents-run"),
        source=str(raw.get("source") or ""),
    )


def read_runs(path: Path) -> list[tuple[str, SavedRun | SeedFormatError]]:
    """Every run of a ``.json`` (one run) or ``.jsonl`` (one per line) file, each with where it was read."""
    if path.suffix == ".jsonl":
        found: list[tuple[str, SavedRun | SeedFormatError]] = []
        for item in read_jsonl(path):
            if isinstance(item, SeedFormatError):
                found.append((str(path), item))
                continue
            where = f"{path}:{item[0]}"
            try:
                found.append((where, parse_run(item[1], where)))
            except SeedFormatError as exc:
                found.append((where, exc))
        return found
    try:
        return [(str(path), parse_run(read_json(path), str(path)))]
    except SeedFormatError as exc:
        return [(str(path), exc)]


#: smolagents' ``truncate_content`` limit (``MAX_LENGTH_TRUNCATE_CONTENT``, 1.26): head and tail kept around a notice.
MAX_OUTPUT = 20000


def _truncate(text: str) -> str:
    if len(text) <= MAX_OUTPUT:
        return text
    half = MAX_OUTPUT // 2
    return (
        text[:half]
        + f"\n..._This content has been truncated to stay below {MAX_OUTPUT} characters_...\n"
        + text[-half:]
    )


def observation_text(step: Step) -> tuple[str | None, str | None]:
    """A failforge interpreter step as smolagents writes it into memory: (observations, error message)."""
    from failforge.environments.dabench import parse_observation

    body = parse_observation(step.content)
    logs = str(body.get("logs", ""))
    if step.error:
        return ("Execution logs:\n" + logs) if logs else None, step.error
    return "Execution logs:\n" + logs + "Last output from code snippet:\n" + _truncate(str(body.get("output"))), None


def smolagents_observation(content: str | None) -> tuple[str | None, str | None, bool]:
    """A recorded interpreter observation (the JSON body, or an error's text as records keep it) as smolagents' memory
    writes it: (observations, error message, is_final_answer)."""
    import json

    try:
        body = json.loads(content or "")
    except json.JSONDecodeError:
        body = None
    if not isinstance(body, dict):
        return None, content or None, False
    step = Step(index=0, kind="tool", agent="environment", role="tool", content=content)
    observations, _ = observation_text(step)
    return observations, None, bool(body.get("is_final_answer"))


def match_question(task: str, data_dir: str | None) -> str:
    """The DA-Bench task id whose question and table both occur in ``task``; a ConfigError when none or several do."""
    from failforge.environments.dabench import load_questions, resolve_dir, task_id_of

    root = resolve_dir(data_dir)
    hits = [q for q in load_questions(root).values() if q.question.strip() in task and q.file_name in task]
    if not hits:
        raise ConfigError(
            f"the run's task names no DA-Bench question of {root} (its question text and table file must both occur)"
        )
    if len(hits) > 1:
        longest = max(len(q.question) for q in hits)
        hits = [q for q in hits if len(q.question) == longest]
        if len(hits) > 1:
            raise ConfigError(
                f"the run's task matches several DA-Bench questions: {', '.join(task_id_of(q.id) for q in hits)}"
            )
    return task_id_of(hits[0].id)


def import_run(run: SavedRun, where: str, *, data_dir: str | None = None, backend: str = "auto") -> ImportVerdict:
    """One saved run to a seed, or the reasons it is not one (see the module docstring for the three conditions)."""
    from failforge.environments.dabench import DabenchEnvironment, env_spec, question, resolve_dir, score
    from failforge.harnesses import harness_from_spec
    from failforge.llm import OracleResponder
    from failforge.seeds import record

    verdict = ImportVerdict(source=where)
    try:
        task_id = match_question(run.task, data_dir)
    except ConfigError as exc:
        verdict.reasons.append(str(exc))
        return verdict
    verdict.question = task_id
    q = question(resolve_dir(data_dir), task_id)
    answer = run.final_answer
    result = score(answer, list(q.common_answers))
    if answer is None:
        verdict.reasons.append("the run has no final answer (no step with is_final_answer)")
        return verdict
    if not result.correct:
        wrong = ", ".join(
            f"{s.name}: found {s.found!r}, label {s.label!r}" for s in result.sub_answers if not s.correct
        )
        verdict.reasons.append(f"its final answer {answer!r} fails dabench.eval_closed_form ({wrong})")
        return verdict
    outputs = [a.model_output or "" for a in run.actions]

    def script(ordinal: int, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        return outputs[min(ordinal, len(outputs) - 1)], None

    try:
        spec = env_spec(task_id, data_dir, backend)
    except ConfigError as exc:  # the question's table is missing or refused: this run is not a seed, the rest go on
        verdict.reasons.append(str(exc))
        return verdict
    # DA-Bench's own harness config (plain-string messages, so the embedded model can continue a branch of the
    # seed), with room for exactly the run's actions.
    default = DabenchEnvironment().default_harness(spec)
    harness = harness_from_spec(
        ComponentSpec(name=default.name, config={**default.config, "max_steps": max(len(run.actions), 1)})
    )
    seed = record(
        env_spec=spec,
        harness=harness,
        model=ComponentSpec(name=run.model),
        upstream=OracleResponder(script, name="smolagents-run"),
    )
    verdict.reasons.extend(_compare(run, seed))
    if not (seed.outcome and seed.outcome.success):
        verdict.reasons.append(f"re-executed, the run's answer fails the evaluator: {seed.outcome}")
    if verdict.reasons:
        return verdict
    provenance = {
        **seed.provenance,
        "imported_from": {
            "format": FORMAT,
            "file": where,
            "source": run.source,
            "task_text": run.task,
            "actions": len(run.actions),
        },
    }
    verdict.seed = seed.model_copy(update={"provenance": provenance})
    return verdict


def _compare(run: SavedRun, seed: Trajectory) -> list[str]:
    """Each saved code step against the re-executed one: the observation and the error as smolagents wrote them."""
    tools = [s for s in seed.steps if s.kind == "tool"]
    coded = [a for a in run.actions if a.code_action is not None and not _parse_error(a)]
    problems = []
    if len(tools) != len(coded):
        problems.append(f"the saved run executed {len(coded)} code blocks, re-executing it ran {len(tools)}")
    for saved, step in zip(coded, tools, strict=False):
        observations, error = observation_text(step)
        saved_error = (saved.error or {}).get("message") if saved.error else None
        if (saved.observations, saved_error) != (observations, error):
            problems.append(
                f"step {step.index} (the run's step {saved.step_number}): the observation differs from the saved one:\n"
                + readable_diff(f"{saved.observations}\n{saved_error or ''}", f"{observations}\n{error or ''}")
            )
    return problems


def _parse_error(action: SavedAction) -> bool:
    return bool(action.error and action.error.get("type") == "AgentParsingError")


__all__ = [
    "FORMAT",
    "ImportVerdict",
    "SavedAction",
    "SavedRun",
    "import_run",
    "match_question",
    "parse_run",
    "read_runs",
]
