"""Replay only the model side of a seed: does this harness still send the requests the seed recorded?

A change to a harness (its prompt, the shape of its messages, a new request field) silently breaks
every seed recorded with it: the next replay drifts at the first model call. Finding that out through
a full replay needs the environment (AgentDojo, a browser, a sandbox). This check needs nothing but
the seed: the harness runs against failforge's real model boundary in strict replay mode, and its
tool calls are answered from the seed's recorded observations — exactly the text the real toolbox
returned, read back from the next recorded request. A harness change shows up as ``PromptDrift`` at
the step it changed, in milliseconds.

It covers harnesses that call tools through the toolbox (the built-in loop and most adapters); a
harness that drives an environment's own runtime (AgentDojo's pipeline) needs the real environment.
"""

from __future__ import annotations

from typing import Any

from failforge.errors import EnvironmentDrift
from failforge.harnesses import harness_from_spec, harness_roster
from failforge.replay import Plan, Session
from failforge.runlog import RunLog
from failforge.trajectory import Step, Trajectory


class _RecordedToolbox:
    """Answers tool calls from the seed: the recorded step is appended, the recorded text returned."""

    def __init__(self, seed: Trajectory, log: RunLog) -> None:
        self.seed = seed
        self.log = log
        # The environment's tools as the agents saw them: the union over every agent's requests (in a team
        # each worker sees only its own share). A tool no agent was ever offered cannot matter here.
        self._tools: list[dict[str, Any]] = []
        seen: set[str] = set()
        for step in seed.steps:
            if step.kind != "agent" or step.model_call is None:
                continue
            for tool in step.model_call.request.get("tools") or []:
                name = str((tool.get("function") or {}).get("name", "")) if isinstance(tool, dict) else ""
                if name and name not in seen:
                    seen.add(name)
                    self._tools.append(tool)
        # A member that never called the model still names its tools in the harness spec; it was never
        # offered them in a recorded request, so a placeholder schema cannot change a checked request.
        for name in _named_tools(seed.harness.config):
            if name not in seen:
                seen.add(name)
                self._tools.append(
                    {
                        "type": "function",
                        "function": {
                            "name": name,
                            "description": "",
                            "parameters": {"type": "object", "properties": {}},
                        },
                    }
                )

    def schemas(self) -> list[dict[str, Any]]:
        return self._tools

    def call(self, name: str, arguments: str, call_id: str | None) -> str:
        index = self.log.next_index
        expected = self.log.expected_step(index)
        if expected is None or expected.kind != "tool" or expected.tool_name != name:
            raise EnvironmentDrift(
                f"the harness called tool {name!r} where the seed has"
                f" {expected.kind + ' step' if expected else 'nothing'}",
                trajectory_id=self.seed.id,
                step=index,
                expected=getattr(expected, "tool_name", None),
                actual=name,
            )
        self.log.append(expected.model_copy(update={"phase": "replayed"}))
        return self._returned_text(expected, call_id)

    def _returned_text(self, step: Step, call_id: str | None) -> str:
        """What the real toolbox returned for ``step``: the matching tool message of the next recorded request."""
        later = next(
            (s for s in self.seed.steps[step.index + 1 :] if s.kind == "agent" and s.model_call is not None), None
        )
        if later is not None and later.model_call is not None:
            for message in later.model_call.request.get("messages") or []:
                if (
                    isinstance(message, dict)
                    and message.get("role") == "tool"
                    and message.get("tool_call_id") == (step.tool_call_id or call_id)
                ):
                    content = message.get("content")
                    if isinstance(content, str):
                        return content
        return (step.content or "") if step.error is None else f"Error: {step.error}"


def _named_tools(config: object) -> list[str]:
    """Every tool name a harness spec assigns to a member (lists of strings under a ``tools`` key)."""
    found: list[str] = []
    if isinstance(config, dict):
        for key, value in config.items():
            if key == "tools" and isinstance(value, list) and all(isinstance(v, str) for v in value):
                found.extend(value)
            else:
                found.extend(_named_tools(value))
    elif isinstance(config, list):
        for item in config:
            found.extend(_named_tools(item))
    return found


def check_harness(seed: Trajectory) -> int:
    """Replay the model side of ``seed`` with its recorded harness; returns the number of model calls checked.

    Raises ``PromptDrift`` (or ``RecordingExhausted``) at the first request the harness now sends
    differently from the recording.
    """
    harness = harness_from_spec(seed.harness)
    session = Session(
        Plan.replay(len(seed.steps)),
        run_id=seed.id,
        expected=seed.steps,
        seed_id=seed.id,
        roster=harness_roster(harness),
    )
    session.log.append(seed.steps[0].model_copy(update={"phase": "replayed"}))
    client = session.client()
    try:
        harness.run(client, seed.model.name, seed.steps[0].content or "", _RecordedToolbox(seed, session.log))
    except Exception as exc:
        raised = session.settle(exc)
        if raised is exc:
            raise
        if raised is not None:
            raise raised from exc
    finally:
        client.close()
    session.end()
    return sum(1 for s in session.steps if s.kind == "agent")


__all__ = ["check_harness"]
