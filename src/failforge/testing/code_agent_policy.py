"""A loopback CodeAgent policy for DA-Bench campaigns, tests and benchmarks: scripted, a pure function of the request.

By position, the n-th assistant turn of a request gets the seed's n-th recorded reply (so the original arm of a
branch succeeds). A stage-2 request (a "Private guidance" system message) gets the seed's reply at that turn with
its code replaced by the block the rule's note prescribes: the agent writes the change and nothing else.
With ``annotate_every=k``, about one such reply in k (chosen by a hash of the request, so the same request always gets
the same reply) also keeps a comment on the changed line saying how many decimals the original value had, as a
model that edits a value but not the comment beside it would; the tell filter is what must catch those.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

from failforge.harnesses import text_of
from failforge.trajectory import Trajectory

Policy = Callable[[dict[str, Any]], tuple[Any, Any]]
_NOTE_CODE = re.compile(r"```python\n(.*?)\n```", re.S)
_BLOCK = re.compile(r"<code>\n?(.*?)\n?</code>", re.S)
_DECIMAL = re.compile(r"(?<![\w.])\d+\.(\d+)(?![\w.])")
_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}


def _annotated(original: str, changed: str) -> str:
    """The changed code with a comment on the first changed line naming the decimals the original line's number had."""
    old_lines, new_lines = original.splitlines(), changed.splitlines()
    for i, (old, new) in enumerate(zip(old_lines, new_lines, strict=False)):
        if old != new:
            places = [len(d) for d in _DECIMAL.findall(old)]
            if places:
                new_lines[i] = f"{new}  # values to {_WORDS.get(places[0], places[0])} decimal places"
            break
    return "\n".join(new_lines)


def code_agent_policy(seeds: list[Trajectory], *, annotate_every: int = 0) -> Policy:
    """``policy(body) -> (content, None)`` for :class:`~failforge.testing.LoopbackModelServer`, playing whichever
    of ``seeds`` has the task the request's first user message names."""
    by_task = {
        seed.task.instruction: [
            s.model_call.response["choices"][0]["message"].get("content") or ""
            for s in seed.agent_steps()
            if s.model_call is not None
        ]
        for seed in seeds
    }

    def policy(body: dict[str, Any]) -> tuple[Any, Any]:
        messages = body["messages"]
        asked = next((text_of(m.get("content")) for m in messages if m.get("role") == "user"), "")
        responses = next((r for task, r in by_task.items() if task in asked), None)
        if not responses:
            return "I cannot help with that.", None
        n = sum(1 for m in messages if m.get("role") == "assistant")
        reply = responses[min(n, len(responses) - 1)]
        guidance = next(
            (
                text_of(m.get("content"))
                for m in messages
                if m.get("role") == "system" and "Private guidance" in text_of(m.get("content"))
            ),
            None,
        )
        if guidance is None:
            if "realistic mistakes" in text_of(messages[0].get("content")):
                return "Nothing can be changed here.", None
            return reply, None
        prescribed = _NOTE_CODE.search(guidance)
        original = _BLOCK.search(reply)
        if prescribed is None or original is None:
            return reply, None
        code = prescribed.group(1)
        digest = int(hashlib.sha256(json.dumps(messages, sort_keys=True, default=str).encode()).hexdigest()[:8], 16)
        if annotate_every and digest % annotate_every == 0:
            code = _annotated(original.group(1), code)
        return reply[: original.start(1)] + code + reply[original.end(1) :], None

    return policy


__all__ = ["code_agent_policy"]
