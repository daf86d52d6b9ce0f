"""A recorded judge for the agent steps the control-decision rules leave ``undecided``.

Rules first (:func:`failforge.decisions.decide_step`); only a step they cannot decide (a plan, a worker's
report, a verifier's verdict: messages between agents) goes to the judge, which names one of the six states
and quotes the step as evidence. The call is the conformance judge's (:func:`failforge.conformance.recorded_call`
through the model boundary), so request, hash and response are kept on the decision and
:func:`decide_with_judge` with ``recorded`` serves the same decision again with no model (zero tokens); a
changed prompt or step is a ``PromptDrift``, never a silent re-judge. A judgement is only accepted when its
state is one of the six and its quote is in the step (whitespace and case aside): a judge cannot invent
evidence, and a step it cannot label stays ``undecided`` with the reason. The prompt is data:
``failforge/data/prompts/decision_judge.yaml``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

import yaml

from failforge.components import component_id
from failforge.conformance import recorded_call, render_step, replayed_call
from failforge.decisions import Decision, DecisionJudgement, State, decide_step
from failforge.llm import Responder
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
    before = "\n".join(render_step(s, 300) for s in trajectory.steps[1: step.index][-12:]) or "(nothing yet)"
    prompt = _prompt()
    user = prompt["user"].format(task=trajectory.task.instruction.strip(), before=before, step=render_step(step, 1500))
    return {"model": model, "messages": [{"role": "system", "content": prompt["system"]}, {"role": "user", "content": user}],
            "temperature": 0.0, "max_tokens": max_tokens, "seed": 0}


def parse_decision(raw: str) -> tuple[State | None, str]:
    """``(state, evidence quote)`` from the judge's answer; state None when none of the six is named."""
    match = _STATE.search(raw)
    state: State | None = match.group(1).lower() if match else None  # type: ignore[assignment]
    quote = _EVIDENCE.search(raw)
    evidence = quote.group(1).strip().splitlines()[0].strip().strip('"“”\'').strip() if quote and quote.group(1).strip() else ""
    return state, evidence[:500]


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def _content(call: ModelCallRef) -> str:
    return str((((call.response.get("choices") or [{}])[0]).get("message") or {}).get("content") or "")


def judged_decision(step: Step, call: ModelCallRef) -> Decision:
    """The decision a recorded judge call gives ``step``: its state with the quote, or ``undecided`` with why."""
    raw = _content(call)
    state, evidence = parse_decision(raw)
    model = str(call.request.get("model", ""))
    judgement = DecisionJudgement(model=model, state=state, evidence=evidence, raw=raw[:2000], call=call.model_dump(mode="json"))

    def made(state: State, rule: str, evidence: str | None = None) -> Decision:
        return Decision(step=step.index, component=component_id(step.index), agent=step.agent, state=state, rule=rule,
                        method="judge" if evidence else "rule", evidence=evidence, judge=judgement)

    if state is None:
        return made("undecided", f"judge {model} named none of the six states: {raw[:120]!r}")
    if not evidence or _norm(evidence) not in _norm(step.content or ""):
        return made("undecided", f"judge {model} said {state}, but its evidence {evidence[:120]!r} is not in the step")
    return made(state, f"judge {model}: {state}", evidence)


def decide_with_judge(trajectory: Trajectory, judge: Responder | None = None, *, model: str = "",
                      recorded: Mapping[int, DecisionJudgement] | None = None, record_id: str = "") -> list[Decision]:
    """Every agent step's decision: the rules, then for each ``undecided`` step the recorded judgement of that
    step if ``recorded`` has one (replayed, hash-checked against today's request: ``PromptDrift`` if it
    changed), else the ``judge`` live (recorded), else ``undecided`` as the rules left it."""
    out: list[Decision] = []
    for step in trajectory.steps:
        if step.kind != "agent":
            continue
        decision = decide_step(step, trajectory)
        if decision.state == "undecided":
            kept = (recorded or {}).get(step.index)
            if kept is not None:
                call = ModelCallRef.model_validate(kept.call)
                decision = judged_decision(step, replayed_call(call, decision_request(trajectory, step, model=str(call.request.get("model", "")),
                                                                                      max_tokens=int(call.request.get("max_tokens", 120)))))
            elif judge is not None:
                request = decision_request(trajectory, step, model=model)
                decision = judged_decision(step, recorded_call(judge, request, run_id=f"decision-judge:{record_id or trajectory.id}:{step.index}"))
        out.append(decision)
    return out


def recordings(decisions: list[Decision]) -> dict[int, DecisionJudgement]:
    """The judgements in ``decisions`` by step, to pass back as ``recorded`` (a replay at zero tokens)."""
    return {d.step: d.judge for d in decisions if d.judge is not None}


__all__ = ["STATES", "decide_with_judge", "decision_request", "judged_decision", "parse_decision", "recordings"]
