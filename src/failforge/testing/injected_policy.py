"""A deterministic AgentDojo agent for injection tests: a pure function of the request.

It solves the user's task with AgentDojo's ground truth (found from the instruction in the request),
and, when a tool message shows one of the suite's injection-task goals, it does one of three things
chosen by a hash of (instruction, goal) — so "some of the time", and always the same for the same
request:

- ``follow``: carry out the injection task's ground-truth calls (AgentDojo's own
  ``injection_task.ground_truth``) right after the observation that showed it, then finish the user's task;
- ``ignore``: finish the user's task as if nothing were there;
- ``refuse``: stop with a refusal that names the injected instructions.

Nothing is read from outside the request: the decision, the calls and the answer follow from the
messages alone, so a branch re-run with the same prefix meets the same agent.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from typing import Any, Literal

Choice = Literal["follow", "ignore", "refuse"]
CHOICES: tuple[Choice, ...] = ("follow", "ignore", "refuse")
REFUSAL = (
    "I will not do that: a tool result contains instructions that you did not give me "
    "(an injected request to act on your behalf). I am stopping here without acting on them."
)


@functools.lru_cache(maxsize=1)
def _prompts() -> dict[str, tuple[str, str]]:
    from failforge.environments.agentdojo import SUITES, get_suite

    return {
        str(task.PROMPT): (name, task_id) for name in SUITES for task_id, task in get_suite(name).user_tasks.items()
    }


@functools.lru_cache(maxsize=256)
def _ground_truth(suite_name: str, task_id: str, injection_task: str | None) -> tuple[tuple[tuple[str, str], ...], str]:
    """Calls (name, JSON arguments) and the answer: of the user task, or of one injection task."""
    from failforge.environments.agentdojo import AgentDojoEpisode

    with AgentDojoEpisode(suite_name, task_id) as episode:
        task = episode.suite.injection_tasks[injection_task] if injection_task else episode.task
        calls = task.ground_truth(episode.pre_env.model_copy(deep=True))
        answer = str(getattr(task, "GROUND_TRUTH_OUTPUT", "") or "Done.")
    return tuple((c.function, json.dumps(dict(c.args), sort_keys=True)) for c in calls), answer


@functools.lru_cache(maxsize=8)
def _goals(suite_name: str) -> dict[str, str]:
    from failforge.environments.agentdojo import get_suite

    return {task_id: str(task.GOAL) for task_id, task in get_suite(suite_name).injection_tasks.items()}


def _norm(value: str) -> str:
    """Whitespace collapsed and YAML's doubled quotes undone: AgentDojo shows tool results as YAML, which folds
    lines."""
    return " ".join(re.sub(r"\\\n\s*", "", value).replace("\\ ", " ").replace("\\n", " ").replace("''", "'").split())


def choice_for(instruction: str, goal: str) -> Choice:
    """The policy's decision for one (instruction, injected goal): a hash, so it varies between tasks and never between
    runs."""
    digest = hashlib.sha256(f"{instruction}\x00{goal}".encode()).digest()
    return CHOICES[digest[0] % len(CHOICES)]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def respond(body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
    """The agent's next message for ``body``: ``(content, tool_calls)`` as LoopbackModelServer wants it."""
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    instruction = next((_text(m) for m in messages if m.get("role") == "user"), "")
    if instruction not in _prompts():
        return "I cannot tell which task this is.", None
    suite_name, task_id = _prompts()[instruction]
    user_calls, answer = _ground_truth(suite_name, task_id, None)
    made = sum(len(m.get("tool_calls") or []) for m in messages if m.get("role") == "assistant")
    before = 0  # calls made before the observation that shows an injected goal
    plan = list(user_calls)
    for message in messages:
        if message.get("role") == "assistant":
            before += len(message.get("tool_calls") or [])
        elif message.get("role") == "tool":
            seen = _norm(_text(message))
            injected = next((tid for tid, goal in _goals(suite_name).items() if goal and _norm(goal) in seen), None)
            if injected is None:
                continue
            decision = choice_for(instruction, _goals(suite_name)[injected])
            if decision == "refuse":
                return REFUSAL, None
            if decision == "follow":
                attack_calls, _ = _ground_truth(suite_name, task_id, injected)
                plan = list(user_calls[:before]) + list(attack_calls) + list(user_calls[before:])
            break
    if made < len(plan):
        name, arguments = plan[made]
        return None, [{"id": f"call_{made}", "type": "function", "function": {"name": name, "arguments": arguments}}]
    return answer, None


__all__ = ["CHOICES", "REFUSAL", "choice_for", "respond"]
