"""The scripted DA-Bench analyst as a loopback model: what ``failforge serve-scripted analyst`` serves.

It plays smolagents' CodeAgent on the DA-Bench questions it is given, with the four replies of the environment's
own scripted analyst (load the table, inspect it, collect the answers from the label, answer). It is a pure
function of the request: the question is the one whose text the request's first user message holds, and the reply
is the one for the turn the request is at (how many assistant messages it already has; the last reply repeats).
A request that names none of its questions is :class:`NoScriptedAnswer` naming what it was asked (the server's
HTTP 422), never a guess.

Served over ``--base-url``, it records DA-Bench seeds through the same live path a capable model takes
(``failforge record dabench --base-url ...``): the CodeAgent's prompts, its parser, the interpreter and the
evaluator are all real; only the model is a script.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from failforge.environments.dabench import analyst_responses, question, resolve_dir
from failforge.harnesses import text_of
from failforge.testing.model_servers import NoScriptedAnswer


class AnalystPolicy:
    """``policy(body) -> (content, None)`` for :class:`~failforge.testing.LoopbackModelServer` on DA-Bench tasks
    (``dabench-<id>`` or ``<id>``) of ``data_dir`` (default: ``FAILFORGE_DABENCH_DIR``, else the shipped subset)."""

    def __init__(self, task_ids: list[str], data_dir: str | Path | None = None) -> None:
        root = resolve_dir(str(data_dir) if data_dir else None)
        self.replies = {q.question: analyst_responses(q) for q in (question(root, t) for t in task_ids)}

    def __call__(self, body: dict[str, Any]) -> tuple[str, None]:
        messages = body.get("messages") or []
        asked = next((text_of(m.get("content")) for m in messages if m.get("role") == "user"), "")
        found = [replies for text, replies in self.replies.items() if text in asked]
        if not found:
            raise NoScriptedAnswer(
                f"the analyst plays {len(self.replies)} DA-Bench question(s) and the request's first user message"
                f" names none of them (it begins {asked[:80]!r}); serve it with --task for that question"
            )
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        replies = found[0]
        return replies[min(turn, len(replies) - 1)], None


__all__ = ["AnalystPolicy"]
