"""The judge protocols: all-at-once, step-by-step, binary search and the hybrid of the first two.

Faithful to Who&When's ``Automated_FA/Lib/utils.py`` where it defines them (prompt wording, stopping
rules, the random half on an ambiguous binary-search reply), with the error mode added: all-at-once
asks for it in the same reply; step-by-step and binary search ask one more question once the step is
found; the hybrid takes the agent and mode from an all-at-once call and then runs step-by-step over
that agent's steps only. No step judged decisive means no prediction (scored as wrong).
"""

from __future__ import annotations

from failforge.attribution._answers import HalfAnswer, StepCheckAnswer, all_at_once_answer, mode_answer
from failforge.attribution._freetext import map_to_mode
from failforge.attribution._methods import MethodContext, Outcome, methods
from failforge.attribution._parse import half, parse_all_at_once, parse_mode_reply, yes_no
from failforge.attribution._prompts import all_at_once, binary_half, mode_question, step_check
from failforge.attribution._record import LabelledFailure

STEP_CHECK_TOKENS = 48
"""A step check's answer is read from its first words ("1. Yes"/"1. No"); the reason is not needed."""
STRUCTURED_STEP_CHECK_TOKENS = 72
"""As JSON the verdict comes with its (bounded) reason, which must end before the budget does."""
HALF_TOKENS, STRUCTURED_HALF_TOKENS = 16, 24


def _budget(ctx: MethodContext, free: int, structured: int) -> int:
    assert ctx.judge is not None
    return free if ctx.judge.structured == "none" else structured


def normalise_agent(name: str | None) -> str:
    from failforge.attribution.importers import bare_agent

    return " ".join(bare_agent(name or "").split()).casefold()


def _mode(ctx: MethodContext, step: int, out: Outcome) -> None:
    assert ctx.judge is not None
    reply = ctx.judge.ask(mode_question(ctx.record, step, ctx.prompt), schema=mode_answer(ctx.prompt))
    code, description = parse_mode_reply(reply, menu=ctx.prompt.menu)
    out.description = description
    out.mode = code if ctx.prompt.menu else map_to_mode(description)
    if out.mode is None:
        out.problems.append("mode reply names no mode" if ctx.prompt.menu else "free-text description maps to no mode")


def _first_yes(ctx: MethodContext, indices: list[int], out: Outcome) -> int | None:
    assert ctx.judge is not None
    for index in indices:
        reply = ctx.judge.ask(
            step_check(ctx.record, index, ctx.prompt),
            max_tokens=_budget(ctx, STEP_CHECK_TOKENS, STRUCTURED_STEP_CHECK_TOKENS),
            schema=StepCheckAnswer,
        )
        verdict = yes_no(reply)
        if verdict is None:
            out.problems.append(f"step {index}: reply is neither yes nor no")
        elif verdict:
            out.reply = reply
            return index
    return None


@methods.register("all-at-once", description="one judge call with the whole log: agent, step, mode")
class AllAtOnce:
    kind = "judge"

    def predict(self, ctx: MethodContext) -> Outcome:
        assert ctx.judge is not None
        reply = ctx.judge.ask(all_at_once(ctx.record, ctx.prompt), schema=all_at_once_answer(ctx.record, ctx.prompt))
        parsed = parse_all_at_once(reply, menu=ctx.prompt.menu)
        mode = parsed.mode if ctx.prompt.menu else map_to_mode(parsed.description)
        problems = list(parsed.problems)
        if not ctx.prompt.menu and parsed.description and mode is None:
            problems.append("free-text description maps to no mode")
        return Outcome(
            agent=parsed.agent,
            step=parsed.step,
            step_text=parsed.step_text,
            mode=mode,
            description=parsed.description,
            reply=reply,
            problems=problems,
        )


@methods.register(
    "step-by-step", description="judge each step in order; stop at the first judged decisive; one call for the mode"
)
class StepByStep:
    kind = "judge"

    def predict(self, ctx: MethodContext) -> Outcome:
        out = Outcome()
        step = _first_yes(ctx, ctx.record.candidate_steps(), out)
        if step is None:
            out.problems.append("no step judged decisive")
            return out
        out.step, out.step_text, out.agent = step, str(step), ctx.record.author(step)
        _mode(ctx, step, out)
        return out


@methods.register(
    "binary-search",
    description="halve the step range until one step is left; author of that step; one call for the mode",
)
class BinarySearch:
    kind = "judge"

    def predict(self, ctx: MethodContext) -> Outcome:
        assert ctx.judge is not None
        out = Outcome()
        indices = ctx.record.candidate_steps()
        rng = ctx.rng()
        lo, hi = 0, len(indices) - 1
        while lo < hi:
            segment = indices[lo : hi + 1]
            mid = (hi - lo) // 2
            reply = ctx.judge.ask(
                binary_half(ctx.record, segment, mid, ctx.prompt),
                max_tokens=_budget(ctx, HALF_TOKENS, STRUCTURED_HALF_TOKENS),
                schema=HalfAnswer,
            )
            side = half(reply)
            if side is None:
                side = "upper" if rng.randint(0, 1) == 0 else "lower"
                out.problems.append(
                    f"steps {segment[0]}-{segment[-1]}: ambiguous reply, chose the {side} half at random"
                )
            if side == "upper":
                hi = lo + mid
            else:
                lo = lo + mid + 1
        step = indices[lo]
        out.step, out.step_text, out.agent, out.reply = (
            step,
            str(step),
            ctx.record.author(step),
            (ctx.judge.replies[-1] if ctx.judge.replies else None),
        )
        _mode(ctx, step, out)
        return out


def agent_steps(record: LabelledFailure, agent: str | None) -> list[int]:
    wanted = normalise_agent(agent)
    return [i for i in record.candidate_steps() if wanted and normalise_agent(record.steps[i].agent) == wanted]


@methods.register(
    "hybrid", description="all-at-once picks the agent (and mode); step-by-step over that agent's steps picks the step"
)
class Hybrid:
    kind = "judge"

    def predict(self, ctx: MethodContext) -> Outcome:
        first = AllAtOnce().predict(ctx)
        out = Outcome(agent=first.agent, mode=first.mode, description=first.description, problems=list(first.problems))
        steps = agent_steps(ctx.record, first.agent)
        step = _first_yes(ctx, steps, out) if steps else None
        if step is None:
            out.problems.append(
                "no step of the chosen agent judged decisive; the all-at-once step is kept"
                if steps
                else "the chosen agent authored no step; the all-at-once step is kept"
            )
            out.step, out.step_text, out.reply = first.step, first.step_text, first.reply
        else:
            out.step, out.step_text = step, str(step)
        return out
