"""A recorded judge for the agent steps the control-decision rules leave ``undecided``.

Rules first (:func:`failforge.judgement._decisions.decide_step`); only a step they cannot decide (a plan, a worker's
report, a verifier's verdict: messages between agents) goes to the judge, which names one of the six states
and quotes the step as evidence. The call is the conformance judge's
(:func:`failforge.judgement._conformance.recorded_call` through the model boundary), so request, hash and response
are kept on the decision and :func:`decide_with_judge` with ``recorded`` serves the same decision again with no
model (zero tokens); a
changed prompt or step is a ``PromptDrift``, never a silent re-judge. A judgement is only accepted when its
state is one of the six and its quote is in the step (whitespace and case aside): a judge cannot invent
evidence, and a step it cannot label stays ``undecided`` with the reason. The prompt is data:
``failforge/data/prompts/decision_judge.yaml``.

With ``final=True`` the run's last agent step is judged too when the rules call it ``stop`` only by the
fallback row (a final answer with no refusal, confirmation or question form): a refusal worded outside the
rules' phrase list reads as a stop, and the five-outcome adjudication asks exactly that step whether it
refuses (:mod:`failforge.judgement._adjudication`). A step the rules decide by its form is never judged.

Storage: the judgements a run was given live on the record, in ``Trajectory.provenance["decision_judgements"]``
(:data:`PROVENANCE_KEY`; step index as a string -> :class:`~failforge.judgement._decisions.DecisionJudgement`),
written by
:func:`with_judgements` (``failforge decide``). A record without the key is an older one and reads as rules only.
:func:`recorded_decisions` is the one way every consumer (the report, ``failforge show``, BLINDSPOT's rates)
gets a trajectory's decisions: rules plus recorded judgements, never a live call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from failforge.errors import PromptDrift
from failforge.judgement._components import component_id
from failforge.judgement._decisions import FALLBACK_STOP_RULE, Decision, DecisionJudgement, State, decide_step
from failforge.judgement._mode_judge import recorded_call, render_step, replayed_call
from failforge.llm import Responder, as_fields, is_probe, with_structured
from failforge.trajectory import ModelCallRef, Step, Trajectory

STATES: tuple[State, ...] = ("act", "ask", "refuse", "stop", "confirm", "recover")
_STATE = re.compile(r"state\s*[:=]\s*\**\s*(act|ask|refuse|stop|confirm|recover)\b", re.I)
_EVIDENCE = re.compile(r"evidence\s*[:=]\s*(.+)", re.I | re.S)


@cache
def _prompt() -> dict[str, str]:
    text = resources.files("failforge").joinpath("data/prompts/decision_judge.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    return {"system": str(data["system"]), "user": str(data["user"])}


def decision_request(trajectory: Trajectory, step: Step, *, model: str, max_tokens: int = 120) -> dict[str, Any]:
    """The judge's chat request for agent step ``step``: the task, up to 12 earlier steps, the step itself."""
    before = "\n".join(render_step(s, 300) for s in trajectory.steps[1 : step.index][-12:]) or "(nothing yet)"
    prompt = _prompt()
    user = prompt["user"].format(task=trajectory.task.instruction.strip(), before=before, step=render_step(step, 1500))
    return {
        "model": model,
        "messages": [{"role": "system", "content": prompt["system"]}, {"role": "user", "content": user}],
        "temperature": 0.0,
        "max_tokens": max_tokens,
        "seed": 0,
    }


class DecisionAnswer(BaseModel):
    """The judge's two lines as a schema (asked with the endpoint's structured-output mechanism)."""

    model_config = ConfigDict(extra="forbid")
    STATE: Literal["act", "ask", "refuse", "stop", "confirm", "recover"]
    EVIDENCE: str = Field(max_length=200)


def parse_decision(raw: str) -> tuple[State | None, str]:
    """``(state, evidence quote)`` from the judge's answer (its last, if it reconsiders); state None when none of the
    six is named."""
    raw = as_fields(raw, DecisionAnswer)
    found = list(_STATE.finditer(raw))
    match = found[-1] if found else None
    state: State | None = match.group(1).lower() if match else None  # type: ignore[assignment]
    quote = _EVIDENCE.search(raw[match.start() :] if match else raw)
    evidence = (
        quote.group(1).strip().splitlines()[0].strip().strip("\"“”'").strip()
        if quote and quote.group(1).strip()
        else ""
    )
    return state, evidence[:500]


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def _content(call: ModelCallRef) -> str:
    return str((((call.response.get("choices") or [{}])[0]).get("message") or {}).get("content") or "")


#: A quote shorter than this (characters, whitespace collapsed) is no evidence: "I" or "Plan:" is in almost any step.
MIN_QUOTE_CHARS = 8


def judged_decision(step: Step, call: ModelCallRef) -> Decision:
    """The decision a recorded judge call gives ``step``: its state with the quote, or ``undecided`` with why."""
    raw = _content(call)
    state, evidence = parse_decision(raw)
    model = str(call.request.get("model", ""))
    judgement = DecisionJudgement(
        model=model, state=state, evidence=evidence, raw=raw[:2000], call=call.model_dump(mode="json")
    )

    def made(state: State, rule: str, evidence: str | None = None) -> Decision:
        return Decision(
            step=step.index,
            component=component_id(step.index),
            agent=step.agent,
            state=state,
            rule=rule,
            method="judge" if evidence else "rule",
            evidence=evidence,
            judge=judgement,
        )

    if state is None:
        return made("undecided", f"judge {model} named none of the six states: {raw[:120]!r}")
    if not evidence or _norm(evidence) not in _norm(step.content or ""):
        return made("undecided", f"judge {model} said {state}, but its evidence {evidence[:120]!r} is not in the step")
    if len(_norm(evidence)) < MIN_QUOTE_CHARS:
        return made(
            "undecided",
            f"judge {model} said {state}, but its evidence {evidence[:120]!r} is shorter than {MIN_QUOTE_CHARS}"
            " characters",
        )
    return made(state, f"judge {model}: {state}", evidence)


#: The provenance key holding a record's recorded judgements (step index as a string -> DecisionJudgement dump).
PROVENANCE_KEY = "decision_judgements"


def judgeable(decision: Decision, *, final: bool = False) -> bool:
    """Whether a judge is asked about this rules decision: ``undecided``, or (``final``) the fallback ``stop``."""
    return decision.state == "undecided" or (final and decision.state == "stop" and decision.rule == FALLBACK_STOP_RULE)


def _replay(trajectory: Trajectory, step: Step, kept: DecisionJudgement) -> Decision:
    """The recorded judgement served again; a changed step or prompt is a ``PromptDrift`` naming the record and the
    step."""
    call = ModelCallRef.model_validate(kept.call)
    request = decision_request(
        trajectory, step, model=str(call.request.get("model", "")), max_tokens=int(call.request.get("max_tokens", 120))
    )
    try:
        return judged_decision(step, replayed_call(call, request))
    except PromptDrift as exc:
        raise PromptDrift(
            "its recorded decision judgement no longer matches the request (the step, the steps before it or the judge"
            " prompt changed since it was judged); judge the original record again",
            trajectory_id=trajectory.id,
            step=step.index,
        ) from exc


def _kept_or_judged(rules: Decision, judged: Decision) -> Decision:
    """The judge's decision, unless it could not decide a step the rules had decided (the fallback ``stop``):
    then the rules' decision stands, with the judge's reason appended and its judgement kept (so it replays)."""
    if judged.state == "undecided" and rules.state != "undecided":
        return rules.model_copy(update={"rule": f"{rules.rule} (judge: {judged.rule[:160]})", "judge": judged.judge})
    return judged


def decide_with_judge(
    trajectory: Trajectory,
    judge: Responder | None = None,
    *,
    model: str = "",
    recorded: Mapping[int, DecisionJudgement] | None = None,
    record_id: str = "",
    final: bool = False,
) -> list[Decision]:
    """Every agent step's decision: the rules, then for each ``undecided`` step (and with ``final`` the last
    agent step the rules call ``stop`` only by the fallback row) the recorded judgement of that step if
    ``recorded`` has one (replayed, hash-checked against today's request: ``PromptDrift`` if it changed),
    else the ``judge`` live (recorded), else the rules' decision. A recorded judgement of a fallback ``stop``
    is replayed whether or not ``final`` is given (it was judged, so it is served)."""
    out: list[Decision] = []
    for step in trajectory.steps:
        if step.kind != "agent":
            continue
        decision = decide_step(step, trajectory)
        kept = (recorded or {}).get(step.index)
        if judgeable(decision, final=final or kept is not None):
            if kept is not None:
                decision = _kept_or_judged(decision, _replay(trajectory, step, kept))
            elif judge is not None:
                request = with_structured(decision_request(trajectory, step, model=model), DecisionAnswer, judge)
                decision = _kept_or_judged(
                    decision,
                    judged_decision(
                        step,
                        recorded_call(
                            judge, request, run_id=f"decision-judge:{record_id or trajectory.id}:{step.index}"
                        ),
                    ),
                )
        out.append(decision)
    return out


def recordings(decisions: list[Decision]) -> dict[int, DecisionJudgement]:
    """The judgements in ``decisions`` by step, to pass back as ``recorded`` (a replay at zero tokens)."""
    return {d.step: d.judge for d in decisions if d.judge is not None}


def stored_judgements(trajectory: Trajectory) -> dict[int, DecisionJudgement]:
    """The judgements recorded on ``trajectory`` (:data:`PROVENANCE_KEY`), by step; {} for a record without
    them (older records). An entry that does not read as a judgement is left out, never guessed at."""
    raw = trajectory.provenance.get(PROVENANCE_KEY)
    out: dict[int, DecisionJudgement] = {}
    if not isinstance(raw, Mapping):
        return out
    for key, value in raw.items():
        try:
            out[int(key)] = DecisionJudgement.model_validate(value)
        except (ValueError, TypeError):  # pydantic's ValidationError is a ValueError
            continue
    return out


def with_judgements(trajectory: Trajectory, decisions: list[Decision]) -> Trajectory:
    """``trajectory`` (a copy) with the judgements in ``decisions`` stored under :data:`PROVENANCE_KEY`
    (replacing any stored before), so :func:`recorded_decisions` and the adjudication read them."""
    kept = {str(step): judgement.model_dump(mode="json") for step, judgement in sorted(recordings(decisions).items())}
    provenance = {k: v for k, v in trajectory.provenance.items() if k != PROVENANCE_KEY}
    if kept:
        provenance[PROVENANCE_KEY] = kept
    return trajectory.model_copy(update={"provenance": provenance})


def recorded_decisions(trajectory: Trajectory) -> list[Decision]:
    """Every agent step's decision from the record alone: rules plus the judgements stored on it, never a
    live call. A stored judgement whose step or prompt changed since (a ``PromptDrift``) is not served: that
    step keeps the rules' decision, with the drift named in its rule. The one reader for every consumer."""
    stored = stored_judgements(trajectory)
    return [recorded_decision(trajectory, step, stored) for step in trajectory.steps if step.kind == "agent"]


def recorded_decision(
    trajectory: Trajectory, step: Step, stored: Mapping[int, DecisionJudgement] | None = None
) -> Decision:
    """One agent step's decision as :func:`recorded_decisions` gives it (``stored``: the record's judgements,
    read from it when not given), for a reader that needs one step (the adjudication's last step)."""
    decision = decide_step(step, trajectory)
    kept = (stored_judgements(trajectory) if stored is None else stored).get(step.index)
    if kept is None or not judgeable(decision, final=True):
        return decision
    try:
        return _kept_or_judged(decision, _replay(trajectory, step, kept))
    except PromptDrift as exc:
        return decision.model_copy(
            update={"rule": f"{decision.rule} (recorded judgement not served: {str(exc)[:160]})"}
        )
    except ValueError as exc:  # a stored call that does not read as one (pydantic's ValidationError)
        return decision.model_copy(
            update={"rule": f"{decision.rule} (recorded judgement unreadable: {str(exc).splitlines()[0][:120]})"}
        )


class Counting:
    """A responder that counts the calls it forwards (``failforge decide`` reports them; a replay makes 0)."""

    def __init__(self, inner: Responder) -> None:
        self.inner = inner
        self.name = inner.name
        self.base_url, self.model = (
            getattr(inner, "base_url", None),
            getattr(inner, "model", None),
        )  # probed as the endpoint it is
        self.calls = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.calls += 0 if is_probe(body) else 1
        return self.inner(body)


def decide_record(
    trajectory: Trajectory, judge: Responder | None, *, model: str, final: bool = True
) -> tuple[Trajectory, list[Decision]]:
    """One record judged (``failforge decide``): the judgements already stored on it replayed (``PromptDrift``
    when its step changed), the other judgeable steps asked of ``judge`` live, all of them stored back on a copy."""
    decided = decide_with_judge(
        trajectory, judge, model=model, recorded=stored_judgements(trajectory), record_id=trajectory.id, final=final
    )
    return with_judgements(trajectory, decided), decided


def decision_label(decision: Decision) -> str:
    """``5 refuse`` for a rules decision, ``5 refuse (judge)`` for a judged one: how the report shows it."""
    return f"{decision.step} {decision.state}" + (" (judge)" if decision.method == "judge" else "")


__all__ = [
    "PROVENANCE_KEY",
    "STATES",
    "Counting",
    "decide_record",
    "decide_with_judge",
    "decision_request",
    "judgeable",
    "decision_label",
    "judged_decision",
    "parse_decision",
    "recorded_decision",
    "recorded_decisions",
    "recordings",
    "stored_judgements",
    "with_judgements",
]
