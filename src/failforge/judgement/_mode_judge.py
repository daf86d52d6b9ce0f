"""The recorded judge for semantic modes: one chat-completions call through the model boundary.

A judge decides what no rule can (is this inference invalid, was this check skipped?), so its
verdict is only as good as its model: the card says which verdicts came from a judge and which
model gave them. The call goes through :class:`~failforge.llm.ModelBoundary` like every agent call,
so the request, its hash and the response are kept on the record and :func:`replay_judge` serves the
same verdict again without a model (a changed prompt is a ``PromptDrift``, never a silent re-judge).
The judge does not see the steering note: it judges the step, not the intention behind it.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from failforge.judgement._verdict import ConformanceVerdict, JudgeRecord
from failforge.llm import (
    AgentIdentity,
    Responder,
    agent_step_from_response,
    as_fields,
    asked_as_recorded,
    with_structured,
)
from failforge.replay import Plan, Session
from failforge.roster import AgentProfile
from failforge.runlog import addressed
from failforge.taxonomy import ErrorMode
from failforge.trajectory import ModelCallRef, Step, Trajectory

JUDGE_SYSTEM = (
    "You check the labels of a dataset of AI-agent failures. You are shown a task, what the agent had done "
    "so far, the action a correct run took at the next step, the action the agent actually took there, and "
    "one error mode with its definition. Decide whether the actual action itself shows exactly that error. "
    "An action that is off-topic, empty or nonsensical does not show a specific error mode. Answer with two "
    "lines: 'EXHIBITED: yes' or 'EXHIBITED: no', then 'RATIONALE:' and one or two sentences."
)


class JudgeAnswer(BaseModel):
    """The judge's two lines as a schema (asked with the endpoint's structured-output mechanism)."""

    model_config = ConfigDict(extra="forbid")
    EXHIBITED: Literal["yes", "no"]
    RATIONALE: str = Field(max_length=300)


_VERDICT = re.compile(r"exhibited\s*[:=]\s*\**\s*(yes|no)\b", re.I)
_RATIONALE = re.compile(r"rationale\s*[:=]\s*(.+)", re.I | re.S)


def render_step(step: Step, limit: int = 600) -> str:
    """One line per step, as the judge and the guide prompts show them."""

    def cut(text: str | None) -> str:
        text = (text or "").strip()
        return text if len(text) <= limit else text[:limit] + " ..."

    if step.kind == "task":
        return f"[{step.index}] user: {cut(step.content)}"
    if step.kind == "agent":
        calls = "; ".join(f"{c.name}({c.arguments})" for c in step.tool_calls)
        parts = [
            p
            for p in (
                f"says: {cut(step.content)}" if (step.content or "").strip() else "",
                f"calls {calls}" if calls else "",
            )
            if p
        ]
        return f"[{step.index}] {step.agent} " + (" and ".join(parts) or "says nothing")
    return f"[{step.index}] tool {step.tool_name} returned: {cut(step.error or step.content)}"


def judge_request(
    seed: Trajectory, injected: Step, t: int, mode: ErrorMode, *, model: str, max_tokens: int = 200
) -> dict[str, Any]:
    prefix = "\n".join(render_step(s, 300) for s in seed.steps[1:t][-12:]) or "(nothing yet)"
    user = (
        f"Task: {seed.task.instruction.strip()}\n\n"
        f"What the agent had done so far:\n{prefix}\n\n"
        f"What a correct run did next:\n{render_step(seed.steps[t])}\n\n"
        f"What the agent actually did next:\n{render_step(injected)}\n\n"
        f"Error mode {mode.code} ({mode.name}): {mode.definition}\n\n"
        "Does the actual action show this error?"
    )
    return {
        "model": model,
        "messages": [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}],
        "temperature": 0.0,
        "max_tokens": max_tokens,
        "seed": 0,
    }


def parse_judgement(raw: str) -> tuple[bool | None, str]:
    """``(exhibited, rationale)``; ``exhibited`` is None when the answer is neither yes nor no."""
    text = as_fields(raw.strip(), JudgeAnswer)
    found = list(_VERDICT.finditer(text))  # a judge that reconsiders is read by its last answer
    match = found[-1] if found else None
    if match:
        exhibited: bool | None = match.group(1).lower() == "yes"
    else:
        first = re.match(r"\W*(yes|no)\b", text, re.I)
        exhibited = None if first is None else first.group(1).lower() == "yes"
    rationale = _RATIONALE.search(text[match.start() :] if match else text)
    return exhibited, (rationale.group(1).strip() if rationale else text)[:1000]


def _content(response: dict[str, Any]) -> str:
    return str((((response.get("choices") or [{}])[0]).get("message") or {}).get("content") or "")


def _record(request: dict[str, Any], call: ModelCallRef) -> JudgeRecord:
    raw = _content(call.response)
    exhibited, rationale = parse_judgement(raw)
    return JudgeRecord(
        model=str(request.get("model", "")),
        exhibited=exhibited,
        rationale=rationale,
        raw=raw[:2000],
        call=call.model_dump(mode="json"),
    )


JUDGE = AgentIdentity("judge", None, "explicit")


def recorded_call(responder: Responder, request: dict[str, Any], *, run_id: str) -> ModelCallRef:
    """One judge call made live through a recording session (the model boundary): the recorded call
    (request, its hash, response) that :func:`replayed_call` serves again. Every recorded judge uses this."""
    session = Session(Plan.record(), run_id=run_id, upstream=responder, roster=[AgentProfile(name="judge")])
    session.models.complete(request, JUDGE)
    call = session.steps[0].model_call
    assert call is not None
    return call


def replayed_call(call: ModelCallRef | dict[str, Any], request: dict[str, Any] | None = None) -> ModelCallRef:
    """A recorded judge call served again with no model (zero tokens); ``request`` (default: the recorded
    one) is hash-checked against the recording, so a judge prompt that changed raises ``PromptDrift``."""
    call = ModelCallRef.model_validate(call)
    recorded = addressed(
        [agent_step_from_response(0, "judge", call.response, call, "recorded")]
    )  # as the boundary writes it
    session = Session(Plan.replay(1), run_id="judge:replay", expected=recorded, roster=[AgentProfile(name="judge")])
    session.models.complete(call.request if request is None else asked_as_recorded(request, call.request), JUDGE)
    served = session.steps[0].model_call
    assert served is not None
    return served


def run_judge(responder: Responder, request: dict[str, Any], *, record_id: str) -> JudgeRecord:
    """Ask the judge live (for :class:`JudgeAnswer`, where the endpoint constrains answers), through a recording
    session, and keep the recorded call."""
    request = with_structured(request, JudgeAnswer, responder)
    return _record(request, recorded_call(responder, request, run_id=f"judge:{record_id}"))


def replay_judge(record: JudgeRecord, request: dict[str, Any] | None = None) -> JudgeRecord:
    """Serve a recorded judgement again with no model; ``request`` (default: the recorded one) is
    hash-checked against the recording, so a judge prompt that changed raises ``PromptDrift``."""
    call = ModelCallRef.model_validate(record.call)
    body = call.request if request is None else asked_as_recorded(request, call.request)
    return _record(body, replayed_call(call, body))


def judged_verdict(record: JudgeRecord, mode: str) -> ConformanceVerdict:
    if record.exhibited is None:
        return ConformanceVerdict(
            mode=mode,
            exhibited=None,
            method="unverified",
            reason=f"the judge ({record.model}) gave no yes/no answer: {record.raw[:120]!r}",
            judge=record,
        )
    says = "shows" if record.exhibited else "does not show"
    return ConformanceVerdict(
        mode=mode,
        exhibited=record.exhibited,
        method="judge",
        reason=f"judge {record.model}: ã_t {says} {mode}: {record.rationale[:300]}",
        judge=record,
    )
