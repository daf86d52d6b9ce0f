"""The rule that decides R.1 at a simulated user's step: a value stated that its inputs do not hold.

A user of the run (roster role ``user``) whose message gives a value (an order number, a zip code, an id)
that appears nowhere in its instructions or the conversation so far, in place of one the run went on to use,
has stated as fact what its inputs do not support: R.1, decided from the text alone. Anything else at a
user's step (a contradiction, a misunderstanding) is left to the judge, as R.1 is at an agent's step.
"""

from __future__ import annotations

import json
import re

from failforge.trajectory import Step, Trajectory

#: A value a user states that a tool can take: a token with a digit (an order number, a zip code, an id).
VALUE_TOKEN = re.compile(r"#?[A-Za-z0-9][A-Za-z0-9_-]*\d[A-Za-z0-9_-]*")
_MIN_LENGTH = 4


def is_user_step(seed: Trajectory, t: int) -> bool:
    """The step is a message written by a roster member whose role is ``user``."""
    step = seed.steps[t]
    roles = {a.name: a.role for a in seed.roster}
    return step.kind == "agent" and roles.get(step.agent) == "user"


def _argument_text(step: Step) -> str:
    return " ".join(
        json.dumps(c.parsed_arguments() if c.parsed_arguments() is not None else c.arguments) for c in step.tool_calls
    )


def used_values(seed: Trajectory, t: int) -> list[str]:
    """The value tokens of step t's message that a later tool call of the run took as an argument."""
    later = " ".join(_argument_text(s) for s in seed.steps[t + 1 :] if s.kind == "agent")
    tokens = dict.fromkeys(m.group(0) for m in VALUE_TOKEN.finditer(seed.steps[t].content or ""))
    return [tok for tok in tokens if len(tok) >= _MIN_LENGTH and re.search(rf"(?<![\w#]){re.escape(tok)}(?!\w)", later)]


def context_text(seed: Trajectory, t: int) -> str:
    """What the user had before step t: its instructions (the task) and the conversation so far."""
    return "\n".join(
        [seed.task.instruction]
        + [s.content or "" for s in seed.steps[1:t]]
        + [_argument_text(s) for s in seed.steps[1:t]]
    )


def check_user_value(seed: Trajectory, injected: Step, t: int) -> tuple[bool | None, str]:
    """True when the user's ã_t states a value unsupported by its context in place of one the run used; None
    where no rule decides (not a user's step, no value at stake, or a value added beside the right one)."""
    if not is_user_step(seed, t):
        return None, "not a user's step: R.1 is judged"
    values = used_values(seed, t)
    if not values:
        return None, "the user's step a_t states no value the run used: R.1 is judged"
    said = injected.content or ""
    context = context_text(seed, t) + "\n" + (seed.steps[t].content or "")
    added = [
        m.group(0) for m in VALUE_TOKEN.finditer(said) if len(m.group(0)) >= _MIN_LENGTH and m.group(0) not in context
    ]
    dropped = [v for v in values if not re.search(rf"(?<![\w#]){re.escape(v)}(?!\w)", said)]
    if injected.tool_calls and not said.strip():
        return False, "the user's ã_t makes a tool call and states nothing"
    slips = [(a, d) for a in added for d in dropped if _misstated(a, d)]
    if slips:
        return True, f"the user states {slips[0][0]} where its instructions and the conversation give {slips[0][1]}"
    if not added:
        return (
            False,
            (
                "the user's ã_t states no value that its instructions and the conversation do not hold"
                f" ({', '.join(values)} as given)"
            ),
        )
    if dropped:  # a new value and a missing one, but not the one misstated (another date, an id left out): judged
        return None, f"the user's ã_t leaves out {dropped[0]} and states {added[0]}, which is not it misstated: judged"
    return None, f"the user's ã_t adds {added[0]} but still states {', '.join(values)}: judged"


def _misstated(said: str, meant: str) -> bool:
    """``said`` is ``meant`` with a slip: the same length, one or two characters different (a mistyped digit,
    two swapped), not another kind of value."""
    return len(said) == len(meant) and 0 < sum(a != b for a, b in zip(said, meant, strict=True)) <= 2
