"""What the stage-1 guide needs to know about a team: who is in it and who is acting at step t.

A coordination error only makes sense against the team: "route the subtask to a teammate whose tools
do not fit" needs the teammates and their tools; "misreport a finding to the orchestrator" needs to
know the step is a report to the orchestrator. :func:`roster_context` renders that for the guide
prompt (empty for a single agent, so single-agent prompts are unchanged); :func:`render_message`
renders one step with its sender and recipient.
"""

from __future__ import annotations

from failforge.trajectory import Step, Trajectory


def _cut(text: str | None, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[:limit] + " ..."


def roster_context(seed: Trajectory, t: int, *, tools_limit: int = 12) -> str:
    """The team and the acting agent at step ``t`` of ``seed``, as a few plain lines."""
    if len(seed.agents) < 2:
        return ""
    lines = ["The team:"]
    for p in seed.roster:
        tools = p.tools[:tools_limit] + (["..."] if len(p.tools) > tools_limit else [])
        lines.append(
            f"- {p.name} ({p.role})"
            + (f": {p.description}" if p.description else "")
            + (f"; tools: {', '.join(tools)}" if tools else "")
        )
    step = seed.steps[t]
    profile = seed.profile(step.agent)
    acting = f"Acting at step {t}: {step.agent} ({profile.role if profile else 'agent'})"
    if step.recipient:
        acting += f", addressing {step.recipient}"
    source = next((s for s in reversed(seed.steps[:t]) if s.recipient == step.agent), None)
    if source is not None and source.agent != step.agent and source.agent in seed.agents:
        acting += f", responding to {source.agent}'s message at step {source.index}"
    if step.model_call is not None and step.model_call.purpose:
        acting += f" (a {step.model_call.purpose} call, not a turn of its own)"
    lines.append(acting + ".")
    return "\n".join(lines)


def render_message(step: Step, limit: int = 400) -> str:
    """One step as ``[i] sender -> recipient: ...`` (a message between agents, a tool call, a result)."""
    arrow = f"{step.agent} -> {step.recipient}" if step.recipient else step.agent
    if step.kind == "tool":
        return f"[{step.index}] {arrow}: tool {step.tool_name} returned: {_cut(step.error or step.content, limit)}"
    calls = "; ".join(f"{c.name}({c.arguments})" for c in step.tool_calls)
    said = _cut(step.content, limit)
    parts = [p for p in (f"says: {said}" if said else "", f"calls {calls}" if calls else "") if p]
    return f"[{step.index}] {arrow}: " + (" and ".join(parts) or "says nothing")


__all__ = ["render_message", "roster_context"]
