"""A loopback agent policy for ScienceWorld campaigns, tests and benchmarks: follow the gold actions, or the note.

Unsteered, the agent takes the next gold action it has not yet taken (in order), so the seed's own step continued
live still succeeds. Steered (a system message carrying the injection's note), it takes the action the note quotes
(``action = '...'``), or stops ("I have finished the task.") when the note quotes none, as the rule guide's A.5
note asks. A pure function of the request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from failforge.injection import NOTE_PREFIX

Policy = Callable[[dict[str, Any]], tuple[Any, Any]]
_QUOTED = re.compile(r"action = '([^']*)'")


def _action(call_id: str, action: str) -> list[dict[str, Any]]:
    return [
        {"id": call_id, "type": "function", "function": {"name": "action", "arguments": json.dumps({"action": action})}}
    ]


def follow_gold_or_the_note(gold: list[str]) -> Policy:
    """``policy(body) -> (content, tool_calls)``; ``gold`` is the task's gold action sequence."""

    def policy(body: dict[str, Any]) -> tuple[Any, Any]:
        messages = body["messages"]
        note = next(
            (str(m["content"]) for m in messages if m.get("role") == "system" and NOTE_PREFIX in str(m.get("content"))),
            None,
        )
        if note is not None:
            asked = _QUOTED.search(note)
            return ("I have finished the task.", None) if asked is None else (None, _action("noted", asked.group(1)))
        taken = [
            json.loads(c["function"]["arguments"]).get("action")
            for m in messages
            if m.get("role") == "assistant"
            for c in m.get("tool_calls") or []
        ]
        position = 0
        for action in taken:
            if position < len(gold) and action == gold[position]:
                position += 1
        if position < len(gold):
            return None, _action(f"g{position}", gold[position])
        return "Done.", None

    return policy


__all__ = ["follow_gold_or_the_note"]
