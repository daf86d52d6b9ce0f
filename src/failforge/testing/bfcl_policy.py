"""A deterministic BFCL agent for loopback campaigns: the ground truth per turn, and under a rule-guide note
the call the note names.

A pure function of the request (no state between calls), so it can play the agent in seeds, replays and
branches alike: without a note it is BFCL's own oracle (:func:`failforge.environments.bfcl.oracle_script`);
with a failforge steering note as the request's last message it makes the call the note spells
(``Call NAME [now] with key = value, ...``, the rule guide's form), else the usual answer.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from failforge.environments.bfcl import entry_of, oracle_script, turn_text
from failforge.injection import NOTE_PREFIX
from failforge.testing.model_servers import NoScriptedAnswer

_CALL = re.compile(r"Call (?:the tool )?([A-Za-z_]\w*)(?: now)? with (.*)", re.DOTALL)
_LITERALS = {"true": True, "false": False, "null": None}

Answer = tuple[str | None, list[dict[str, Any]] | None]


def _value(node: ast.expr) -> Any:
    if isinstance(node, ast.Name) and node.id in _LITERALS:  # the note writes JSON's true/false/null
        return _LITERALS[node.id]
    return ast.literal_eval(node)


def note_call(note: str) -> tuple[str, dict[str, Any]] | None:
    """The call a rule-guide note names, as (name, arguments); None when the note names no call."""
    match = _CALL.search(note)
    if match is None:
        return None
    name, rest = match.group(1), match.group(2).replace("\n", "\\n")  # a note quotes multi-line text as written
    if rest.startswith("no arguments"):
        return name, {}
    ends = [i for i, ch in enumerate(rest) if ch in ";."] + [len(rest)]
    for end in ends:  # the arguments end at the first ';' or '.' after which they still parse
        try:
            node = ast.parse(f"f({rest[:end]})", mode="eval").body
        except SyntaxError:
            continue
        if isinstance(node, ast.Call) and not node.args and all(k.arg for k in node.keywords):
            try:
                return name, {str(k.arg): _value(k.value) for k in node.keywords}
            except ValueError:
                continue
    return None


class BfclNotePolicy:
    """The oracle of one BFCL task; under a steering note, the note's call (``LoopbackModelServer(policy=...)``)."""

    def __init__(self, task: str) -> None:
        self.task = task
        self.script = oracle_script(*entry_of(task))

    def __call__(self, body: dict[str, Any]) -> Answer:
        messages = body.get("messages") or []
        system = str((messages[0] or {}).get("content") or "") if messages else ""
        if "realistic mistakes" in system or "check the labels" in system:
            raise NoScriptedAnswer(
                "the BFCL script plays the agent only; BFCL campaigns guide and judge by rule, with no model"
            )
        last = messages[-1] if messages else {}
        note = str(last.get("content") or "") if last.get("role") in ("system", "developer") else ""
        if note.startswith(NOTE_PREFIX):
            named = note_call(note)
            if named is not None:
                name, args = named
                n = sum(1 for m in messages if m.get("role") == "assistant")
                return None, [
                    {
                        "id": f"call_note_{n}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                ]
            return self.script(0, {**body, "messages": messages[:-1]})  # type: ignore[no-any-return]
        return self.script(0, body)  # type: ignore[no-any-return]


class BfclPolicies:
    """Several BFCL tasks behind one loopback server: the task is the first whose user turns begin with the
    request's user messages (tasks of different categories share their first turn, so match on all of them)."""

    def __init__(self, tasks: list[str]) -> None:
        self.policies = [
            (BfclNotePolicy(task), [turn_text(entry_of(task)[0], i) for i in range(len(entry_of(task)[0]["question"]))])
            for task in tasks
        ]

    def __call__(self, body: dict[str, Any]) -> Answer:
        said = [str(m.get("content") or "") for m in body.get("messages") or [] if m.get("role") == "user"]
        answers = [policy(body) for policy, turns in self.policies if turns[: len(said)] == said]
        if not answers:
            served = ", ".join(policy.task for policy, _ in self.policies)
            raise NoScriptedAnswer(
                f"no served BFCL task ({served}) begins with the user turns {[t[:60] for t in said]}; serve the task"
                " with --task ID"
            )
        if any(json.dumps(a, sort_keys=True) != json.dumps(answers[0], sort_keys=True) for a in answers[1:]):
            raise NoScriptedAnswer(
                "two BFCL tasks begin with these user turns and answer differently: serve them apart"
                f" ({[t[:60] for t in said]})"
            )
        return answers[0]
