"""Rule-written notes for a simulated user's own mistakes: a value stated wrongly (R.1 at a user's step).

In a conversation the user is a party of the run (roster role ``user``), and its most common decisive
slip is concrete: it gives the agent an order number, a zip code or an id that is not the one its own
instructions hold — a mistyped digit — and a careful agent then acts on what it was told. That is R.1
(the user states as fact a value its inputs do not support), and a rule can name it exactly: one value
of the user's message that the run went on to use in a tool call, with one digit changed. The value must
matter (the seed used it), so the agent acting on the wrong one is what the evaluator can see.

The note goes to the user's own model; the rule only decides what to ask for. Agent steps are not this
rule's business: R.1 there is semantic and goes to the model guide (``auto``) and the judge.
"""

from __future__ import annotations

import random
from typing import Any

from failforge.judgement import context_text, is_user_step, used_values
from failforge.trajectory import Trajectory


def mistyped(value: str, context: str, rng: random.Random) -> str | None:
    """The value with one digit changed, and not a value the context already holds."""
    digits = [i for i, ch in enumerate(value) if ch.isdigit()]
    for i in rng.sample(digits, len(digits)):
        for d in rng.sample("0123456789", 10):
            candidate = value[:i] + d + value[i + 1 :]
            if d != value[i] and candidate not in context:
                return candidate
    return None


def r1_user(seed: Trajectory, t: int, rng: random.Random) -> tuple[str, dict[str, Any]] | str:
    if not is_user_step(seed, t):
        return (
            "R.1 by rule is a user's mistake (a value stated wrongly); this is not a user's step (use the model guide)"
        )
    step = seed.steps[t]
    if step.tool_calls or not (step.content or "").strip():
        return "the user's step a_t is not a message, so it states no value"
    values = used_values(seed, t)
    if not values:
        return "the user's message states no value (a number or id) that the run later used in a tool call"
    original = rng.choice(values)
    wrong = mistyped(original, context_text(seed, t), rng)
    if wrong is None:
        return f"no mistyped form of {original} differs from every value in the user's context"
    note = (
        f"In this message, write {wrong} where you would write {original}, as if you remembered it that way; change"
        " nothing else."
    )
    return note, {"user_value": original, "value": wrong, "used_by": "a later tool call of the seed"}


USER_RULES = {"R.1": r1_user}
