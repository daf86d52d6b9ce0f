"""Rules that decide the Perception modes on a screenshot agent's step, from what the DOM says is true.

P.2 (visual grounding): the seed's click at step t landed on an element whose box the page reported
(the coordinate ``click`` tool's observation names the element under the point and its box, read
from ``document.elementFromPoint`` before the click). ã_t exhibits P.2 when it is a click whose point
lies outside that box: the agent pointed somewhere other than where its target is drawn.

P.1 (misread content): the seed typed a value at step t that the page renders (it is in the page's
text, which the DOM gives). ã_t exhibits P.1 when it types a different value that is a misreading of
it (same length within two characters, sharing most characters) and that the page does not render.
Anything else about a P.1 (a misread colour, a misjudged state) is semantic and goes to the judge.
"""

from __future__ import annotations

import difflib
import re

from failforge.trajectory import Step, Trajectory

Outcome = tuple[bool | None, str]  # None: no rule decides; the judge path
_HIT = re.compile(
    r"^clicked at \((\d+), (\d+)\) on \[([^\]]*)\] (\S+) (\".*?\") box=\((\d+), (\d+), (\d+), (\d+)\)", re.M
)


def clicked_box(seed: Trajectory, t: int) -> tuple[tuple[int, int, int, int], str] | None:
    """The box (left, top, width, height) and description of the element the seed's click at t landed on."""
    for step in seed.steps[t + 1 :]:
        if step.kind != "tool":
            break
        found = _HIT.search(step.content or "")
        if found:
            box = tuple(int(found.group(i)) for i in range(6, 10))
            return (box[0], box[1], box[2], box[3]), f"[{found.group(3)}] {found.group(4)} {found.group(5)}"
    return None


def _point(step: Step) -> tuple[int, int] | None:
    for call in step.tool_calls:
        args = call.parsed_arguments() or {}
        if call.name == "click" and isinstance(args.get("x"), int) and isinstance(args.get("y"), int):
            return int(args["x"]), int(args["y"])
    return None


def _typed(step: Step) -> str | None:
    for call in step.tool_calls:
        args = call.parsed_arguments() or {}
        if call.name == "type" and isinstance(args.get("text"), str) and "bid" not in args:
            return str(args["text"])
    return None


def check_p2(seed: Trajectory, injected: Step, t: int) -> Outcome:
    original = seed.steps[t]
    if _point(original) is None:
        return False, "a_t is no coordinate click, so there is no target to miss"
    point = _point(injected)
    if point is None:
        return False, "ã_t is no coordinate click; P.2 needs a click that lands off its target"
    hit = clicked_box(seed, t)
    if hit is None:
        return (
            False,
            "the seed's observation after a_t names no clicked element box (not a coordinate-action MiniWoB++ seed)",
        )
    (left, top, width, height), what = hit
    x, y = point
    if left <= x < left + width and top <= y < top + height:
        return (
            False,
            f"ã_t clicks ({x}, {y}), inside the box of the target {what} at ({left}, {top}, {width}, {height})",
        )
    return (
        True,
        (
            f"ã_t clicks ({x}, {y}), outside the box ({left}, {top}, {width}, {height}) of the target {what} the seed"
            " clicked"
        ),
    )


def check_p1(seed: Trajectory, injected: Step, t: int) -> Outcome:
    wanted = _typed(seed.steps[t])
    if wanted is None:
        return None, "a_t types no value read off the screen: a misread here is semantic and goes to the judge"
    typed = _typed(injected)
    if typed is None:
        return False, "ã_t types nothing; P.1 here needs a misread value typed"
    page = seed.task.instruction
    if wanted not in page:
        return False, f"the seed's value {wanted!r} is not rendered on the page, so the DOM gives no truth to misread"
    if typed == wanted:
        return False, f"ã_t types {typed!r}, the value the page shows"
    if typed in page:
        return False, f"ã_t types {typed!r}, which the page also renders: another value, not a misreading"
    ratio = difflib.SequenceMatcher(None, typed.lower(), wanted.lower()).ratio()
    if abs(len(typed) - len(wanted)) > 2 or ratio < 0.5:
        return (
            False,
            f"ã_t types {typed!r}, too unlike the rendered {wanted!r} (similarity {ratio:.2f}) to be a misreading",
        )
    return True, f"ã_t types {typed!r} where the page renders {wanted!r} (similarity {ratio:.2f}): a misread value"


PERCEPTION_CHECKS = {"P.1": check_p1, "P.2": check_p2}
