"""The AgentAtlas trajectory auditor as a judge method (``auditor``) and as a labeller.

One judge call per record (``failforge/data/prompts/auditor.yaml``) asks for the auditor's whole output
as "Key: value" lines: a control-decision map (one ``Decision: step | state | "quote" | confidence`` line
per agent step), the three scores O / C / T (0-5, kept apart), the primary error source, the downstream
impact, and the decisive error's ``Agent:``, ``Step:`` and ``Mode:`` (a code from the menu, the paraphrased
menu, or free text mapped afterwards by :func:`failforge.attribution._freetext.map_to_mode`).

Validation is field by field. A decision line must name a recorded agent step, one of the six states, a
quote found in that step's text (whitespace, case and ``"``/``|`` aside) and a confidence in 0..1; a bad
line is dropped and named. A score must be an integer 0..5; source and impact one of failforge's values
(:mod:`failforge.judgement`; "recoverable with retry/cost" are read as the AgentAtlas wording of the
first two impacts); the agent a recorded agent (returned as recorded), the step a recorded non-system
step, the mode one of the 18 (or a description that maps). Any invalid field, or no valid decision
line, earns one retry naming the problems; each field is then kept from whichever reply had it valid,
the retry first (the decision map as a whole: the retry's if it has a valid line). A field invalid in
both stays None, its problem kept, and the record stays in the denominator.

Mapping to a prediction: the explicit ``Agent:``, ``Step:`` and ``Mode:`` fields, never derived (the agent
is not read off the step's author, the step not read off the decision map). The whole validated output is
:class:`~failforge.attribution._audit.Audit`, kept on the prediction (``audit``); :func:`attach_audits`
puts recorded audits on the run's records (``failforge attach-audit``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any, get_args

import yaml

from failforge.attribution._answers import auditor_answer
from failforge.attribution._audit import Audit, AuditDecision, AuditState
from failforge.attribution._fields import check_agent, check_mode, check_step, mode_parts, recorded_agents
from failforge.attribution._methods import MethodContext, Outcome, methods
from failforge.attribution._predictions import Prediction
from failforge.attribution._prompts import Messages, PromptConfig, render_steps, step_body
from failforge.attribution._record import LabelledFailure
from failforge.judgement import ErrorSource, Impact, error_source
from failforge.llm import last_complete_block

STATES: tuple[str, ...] = get_args(AuditState)
SOURCES: tuple[str, ...] = get_args(ErrorSource)
IMPACTS: tuple[str, ...] = get_args(Impact)
_IMPACT_ALIASES = {"recoverable with retry": "retry-recoverable", "recoverable with cost": "cost-recoverable"}
_KEYS = ("Decision", "Outcome", "Control", "Trajectory", "Source", "Impact", "Agent", "Step", "Mode", "Reason")
_LINE = re.compile(rf"^[ \t*\-]*({'|'.join(_KEYS)})[ \t*]*:[ \t]*(.*)$", re.IGNORECASE | re.MULTILINE)
_SCORE = re.compile(r"^\s*(\d+)(?:\s*/\s*5)?\b")
#: Fields whose invalidity earns the retry (the decision map counts when no line of it is valid).
CHECKED = ("agent", "step", "mode", "outcome", "control", "trajectory", "error_source", "impact", "decisions")


@cache
def prompts() -> dict[str, str]:
    text = resources.files("failforge").joinpath("data/prompts/auditor.yaml").read_text(encoding="utf-8")
    loaded: dict[str, str] = yaml.safe_load(text)
    return loaded


def decision_steps(record: LabelledFailure) -> list[int]:
    """The steps that take a control decision: the agent steps (every non-system step if a record has none)."""
    agent = [i for i in record.candidate_steps() if record.steps[i].kind == "agent"]
    return agent or record.candidate_steps()


def _messages(prompt: str) -> Messages:
    return [{"role": "system", "content": prompts()["system"]}, {"role": "user", "content": prompt}]


def audit_prompt(record: LabelledFailure, config: PromptConfig) -> Messages:
    mode_ask, mode_line = mode_parts(config)
    answer = (
        f"The correct answer is: {record.task.gold_answer}\n" if config.with_answer and record.task.gold_answer else ""
    )
    return _messages(
        prompts()["audit"].format(
            question=record.task.question,
            answer_line=answer,
            steps=render_steps(record, record.candidate_steps(), config),
            decision_steps=", ".join(map(str, decision_steps(record))),
            mode_ask=mode_ask,
            mode_line=mode_line,
        )
    )


def reply_fields(reply: str) -> tuple[dict[str, str], list[str]]:
    """(every key but Decision, from the last complete answer block, else its first value; every Decision line's value
    in order)."""
    pairs: list[tuple[str, str]] = []
    lines: list[str] = []
    for match in _LINE.finditer(reply or ""):
        key, value = match.group(1).title(), match.group(2).strip()
        if key == "Decision":
            lines.append(value)
        else:
            pairs.append((key, value.strip("*`'\" ").strip()))
    return last_complete_block(pairs, ("Agent", "Step")), lines


def _flat(text: str) -> str:
    return " ".join(text.replace('"', " ").replace("|", " ").split()).casefold()


def parse_decision(record: LabelledFailure, value: str, allowed: set[int]) -> AuditDecision | str:
    """One ``step | state | "quote" | confidence`` line as a decision, or what is wrong with it."""
    parts = [p.strip() for p in value.split("|")]
    if len(parts) < 4:
        return f"decision {value[:60]!r}: expected 'step | state | \"quote\" | confidence'"
    step_text, state, confidence_text = parts[0], parts[1].lower().strip("*` "), parts[-1]
    quote = "|".join(parts[2:-1]).strip().strip("\"'“”").strip()
    digits = re.search(r"\d+", step_text)
    if not digits or int(digits.group(0)) not in allowed:
        return f"decision {step_text!r}: not one of the audited steps"
    step = int(digits.group(0))
    if state not in STATES:
        return f"decision at step {step}: state {parts[1]!r} is not one of {', '.join(STATES)}"
    if not quote or _flat(quote) not in _flat(step_body(record.steps[step])):
        return f"decision at step {step}: the quote is not in the step's text"
    try:
        confidence = float(confidence_text.rstrip("%")) / (100 if confidence_text.endswith("%") else 1)
    except ValueError:
        return f"decision at step {step}: confidence {confidence_text!r} is not a number"
    if not 0 <= confidence <= 1:
        return f"decision at step {step}: confidence {confidence_text!r} is outside 0..1"
    return AuditDecision(step=step, state=state, evidence=quote, confidence=confidence)  # type: ignore[arg-type]


def _score(value: str | None, key: str) -> int | str:
    match = _SCORE.match(value or "")
    if match and 0 <= int(match.group(1)) <= 5:
        return int(match.group(1))
    return f"{key} {value!r} is not an integer 0-5" if value else f"no {key}"


def _one_of(value: str | None, allowed: tuple[str, ...], aliases: dict[str, str] | None = None) -> str | None:
    """The allowed value ``value`` names, case, hyphens and underscores aside (or an alias's value)."""

    def norm(text: str) -> str:
        return " ".join(text.lower().replace("-", " ").replace("_", " ").split())

    text = norm(value or "")
    table = {norm(a): a for a in allowed} | {norm(k): v for k, v in (aliases or {}).items()}
    return table.get(text)


def validate(
    record: LabelledFailure, reply: str, config: PromptConfig
) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """(each valid field, what is wrong with each invalid field, the dropped decision lines' problems)."""

    fields, lines = reply_fields(reply)
    valid: dict[str, Any] = {}
    problems: dict[str, str] = {}
    allowed = set(decision_steps(record))
    decided: list[AuditDecision] = []
    dropped: list[str] = []
    for line in lines:
        parsed = parse_decision(record, line, allowed)
        if isinstance(parsed, str):
            dropped.append(parsed)
        elif any(d.step == parsed.step for d in decided):
            dropped.append(f"decision at step {parsed.step}: given twice, the first kept")
        else:
            decided.append(parsed)
    if decided:
        valid["decisions"] = decided
    else:
        problems["decisions"] = "no valid Decision line"
    for key in ("Outcome", "Control", "Trajectory"):
        got = _score(fields.get(key), key)
        if isinstance(got, int):
            valid[key.lower()] = got
        else:
            problems[key.lower()] = got
    for key, name, allowed_values, aliases in (
        ("Source", "error_source", SOURCES, None),
        ("Impact", "impact", IMPACTS, _IMPACT_ALIASES),
    ):
        value = fields.get(key)
        canonical = _one_of(value, allowed_values, aliases)
        if canonical:
            valid[name] = canonical
        else:
            problems[name] = f"{key} {value!r} is not one of {', '.join(allowed_values)}" if value else f"no {key}"
    check_agent(record, "Agent", fields.get("Agent"), valid, problems)
    check_step(record, fields.get("Step"), valid, problems)
    check_mode(config, fields.get("Mode"), valid, problems)
    if fields.get("Reason"):
        valid["reason"] = fields["Reason"]
    return valid, problems, dropped


def retry_prompt(record: LabelledFailure, problems: dict[str, str], config: PromptConfig) -> str:
    _, mode_line = mode_parts(config)
    return prompts()["retry"].format(
        problems="; ".join(problems.values()),
        decision_steps=", ".join(map(str, decision_steps(record))),
        agents=", ".join(sorted(set(recorded_agents(record).values()))),
        mode_line=mode_line,
    )


def audit_of(valid: dict[str, Any], problems: list[str]) -> Audit:
    return Audit(
        decisions=valid.get("decisions", []),
        outcome=valid.get("outcome"),
        control=valid.get("control"),
        trajectory=valid.get("trajectory"),
        error_source=valid.get("error_source"),
        impact=valid.get("impact"),
        agent=valid.get("agent"),
        step=valid.get("step"),
        mode=valid.get("mode"),
        description=valid.get("description"),
        reason=valid.get("reason"),
        mode_source=error_source(valid.get("mode")),
        problems=problems,
    )


@methods.register(
    "auditor",
    description=(
        "AgentAtlas trajectory auditor: decision map, O/C/T scores, error source, impact, decisive agent/step/mode"
    ),
)
class Auditor:
    kind = "judge"

    def predict(self, ctx: MethodContext) -> Outcome:
        assert ctx.judge is not None
        record, config, judge = ctx.record, ctx.prompt, ctx.judge
        messages = audit_prompt(record, config)
        schema = auditor_answer(record, config, decision_steps(record), STATES, SOURCES, IMPACTS)
        reply = judge.ask(messages, schema=schema)
        valid, invalid, dropped = validate(record, reply, config)
        problems: list[str] = []
        if invalid:
            again = [
                *messages,
                {"role": "assistant", "content": reply},
                {"role": "user", "content": retry_prompt(record, invalid, config)},
            ]
            reply = judge.ask(again, schema=schema)
            second, still, dropped_again = validate(record, reply, config)
            if "decisions" in second:
                dropped = dropped_again
            if "mode" not in second and "mode" in valid:  # the mode and its description come from one reply
                second.pop("description", None)
            valid = {**valid, **second}
            problems.extend(f"after one retry: {message}" for field, message in still.items() if field not in valid)
        problems.extend(dropped)
        audit = audit_of(valid, problems)
        return Outcome(
            agent=audit.agent,
            step=audit.step,
            step_text=valid.get("step_text"),
            mode=audit.mode,
            description=audit.description,
            reply=reply,
            problems=problems,
            audit=audit,
        )


def attach_audits(
    records: Sequence[LabelledFailure], predictions: Sequence[Prediction], judge_model: str | None
) -> tuple[list[LabelledFailure], list[str]]:
    """The records, each with its prediction's audit (method key and judge model set), and the ids left without one."""
    by_id = {p.record_id: p for p in predictions if p.audit is not None}
    out: list[LabelledFailure] = []
    missing: list[str] = []
    for record in records:
        prediction = by_id.get(record.id)
        if prediction is None or prediction.audit is None:
            missing.append(record.id)
            out.append(record)
            continue
        audit = prediction.audit.model_copy(update={"method": prediction.method, "judge_model": judge_model})
        out.append(record.model_copy(update={"audit": audit}))
    return out, missing
