"""Baselines that need no model: floors every attribution method must beat.

- ``random``: a step drawn uniformly from the candidate steps and a mode drawn uniformly from the 18,
  seeded by (seed, record id) so a rerun draws the same; the agent is the step's author.
- ``first-agent-step``: the first step an agent wrote (errors are often early); no mode.
- ``last-step``: the last step (where the failure shows); no mode.
- ``majority-agent``: per source, the agent most often at fault in the evaluated records' gold (LongRCA's
  per-source majority-role baseline; it reads the gold labels, so it is a prior, not a method); its
  first step; the source's most frequent gold mode.
- ``role-prior``: LongRCA's role prior: per source, the most frequent *role* of the gold agent (the role the
  record gives the agent, else its name, as in Who&When where agents are named by role); predicted as the
  first agent of this record with that role, at its first step; no mode. Where agent names differ from run
  to run but roles do not (failforge's teams: ``worker``), it is the stronger of the two priors.
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
        steps = [
            i for i in ctx.record.candidate_steps() if ctx.record.steps[i].kind == "agent"
        ] or ctx.record.candidate_steps()
        return Outcome(agent=ctx.record.author(steps[0]), step=steps[0], step_text=str(steps[0]))


@methods.register("last-step", description="the last step")
class LastStep:
    kind = "baseline"

    def predict(self, ctx: MethodContext) -> Outcome:
        step = ctx.record.candidate_steps()[-1]
        return Outcome(agent=ctx.record.author(step), step=step, step_text=str(step))


@methods.register(
    "majority-agent",
    description="the source's most frequent gold agent, its first step, the source's most frequent mode",
)
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


@methods.register(
    "role-prior", description="LongRCA's role prior: the source's most frequent gold role, its first agent and step"
)
class RolePrior:
    kind = "baseline"

    def predict(self, ctx: MethodContext) -> Outcome:
        assert ctx.dataset is not None
        record = ctx.record
        role = ctx.dataset.majority_role.get(record.source)
        writers = [record.steps[i].agent for i in record.candidate_steps() if record.steps[i].kind == "agent"]
        agent = next((a for a in dict.fromkeys(writers) if (record.roles.get(a) or a) == role), None)
        if agent is None:
            return Outcome(problems=[f"no agent of the prior role {role!r} wrote a step here"])
        steps = agent_steps(record, agent)
        return Outcome(agent=agent, step=steps[0], step_text=str(steps[0])) if steps else Outcome(agent=agent)
