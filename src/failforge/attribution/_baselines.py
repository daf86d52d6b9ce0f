"""Baselines that need no model: floors every attribution method must beat.

- ``random``: a step drawn uniformly from the candidate steps and a mode drawn uniformly from the 18,
  seeded by (seed, record id) so a rerun draws the same; the agent is the step's author.
- ``first-agent-step``: the first step an agent wrote (errors are often early); no mode.
- ``last-step``: the last step (where the failure shows); no mode.
- ``majority-agent``: per source, the agent most often at fault in the evaluated records' gold (LongRCA's
  per-source majority-role baseline; it reads the gold labels, so it is a prior, not a method); its
  first step; the source's most frequent gold mode.
"""

from __future__ import annotations

from failforge.attribution._codes import FAILFORGE_CODES
from failforge.attribution._methods import MethodContext, Outcome, methods
from failforge.attribution._protocols import agent_steps


@methods.register("random", description="seeded random step (its author) and random mode")
class RandomStep:
    kind = "baseline"

    def predict(self, ctx: MethodContext) -> Outcome:
        rng = ctx.rng()
        step = rng.choice(ctx.record.candidate_steps())
        return Outcome(agent=ctx.record.author(step), step=step, step_text=str(step), mode=rng.choice(FAILFORGE_CODES))


@methods.register("first-agent-step", description="the first step an agent wrote")
class FirstAgentStep:
    kind = "baseline"

    def predict(self, ctx: MethodContext) -> Outcome:
        steps = [i for i in ctx.record.candidate_steps() if ctx.record.steps[i].kind == "agent"] or ctx.record.candidate_steps()
        return Outcome(agent=ctx.record.author(steps[0]), step=steps[0], step_text=str(steps[0]))


@methods.register("last-step", description="the last step")
class LastStep:
    kind = "baseline"

    def predict(self, ctx: MethodContext) -> Outcome:
        step = ctx.record.candidate_steps()[-1]
        return Outcome(agent=ctx.record.author(step), step=step, step_text=str(step))


@methods.register("majority-agent", description="the source's most frequent gold agent, its first step, the source's most frequent mode")
class MajorityAgent:
    kind = "baseline"

    def predict(self, ctx: MethodContext) -> Outcome:
        assert ctx.dataset is not None
        agent = ctx.dataset.majority_agent.get(ctx.record.source)
        steps = agent_steps(ctx.record, agent)
        out = Outcome(agent=agent, mode=ctx.dataset.majority_mode.get(ctx.record.source))
        if steps:
            out.step, out.step_text = steps[0], str(steps[0])
        else:
            out.problems.append(f"the majority agent {agent!r} wrote no step here")
        return out
