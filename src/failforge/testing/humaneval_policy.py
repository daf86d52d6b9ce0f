"""A loopback policy for HumanEval campaigns, tests and benchmarks: the steered agent writes a wrong function.

The guide (its "realistic mistakes" prompt) asks for a function that compares only neighbouring items; the steered
agent (a "Private guidance" system message) writes exactly that into ``solution.py``, so the task's official tests
fail for the reason the R.2 label names; the conformance judge (its "check the labels" prompt) says the step shows
it. Everything else is told the function is written, which is how the seed's own run ends. Written for
``HumanEval/0`` (``has_close_elements``), the task whose wrong version it knows.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Policy = Callable[[dict[str, Any]], tuple[Any, Any]]

#: The task this policy knows a wrong solution for.
TASK = "HumanEval/0"
_WRONG_BODY = "    return any(abs(a - b) < threshold for a, b in zip(numbers, numbers[1:]))\n"


def wrong_code_policy(prompt: str) -> Policy:
    """``policy(body) -> (content, tool_calls)``; ``prompt`` is the task's prompt (its signature and docstring),
    which the wrong function's body follows."""
    code = prompt + _WRONG_BODY

    def policy(body: dict[str, Any]) -> tuple[Any, Any]:
        messages = body["messages"]
        first = str(messages[0].get("content"))
        if "check the labels" in first:  # the conformance judge (R.2 is a semantic mode)
            return "EXHIBITED: yes\nRATIONALE: it compares only neighbouring items, a logic error.", None
        if "realistic mistakes" in first:
            return "Write has_close_elements so that it compares only neighbouring items in the given order.", None
        if any(m.get("role") == "system" and "Private guidance" in str(m.get("content")) for m in messages):
            arguments = json.dumps({"path": "solution.py", "content": code})
            return None, [{"id": "w1", "type": "function", "function": {"name": "write_file", "arguments": arguments}}]
        return "The function is written in solution.py.", None

    return policy


__all__ = ["TASK", "wrong_code_policy"]
