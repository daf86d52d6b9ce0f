"""Rule-guide notes for the Perception modes, written from what the screenshot at step t shows.

P.2 (visual grounding): the seed's step a_t clicks at (x, y); the note asks for a click at another
control the screenshot shows (a button, text field or check box found in the PNG's pixels by
:func:`failforge.environments.miniwob._vision_policy.read_screen`) whose centre lies outside the box
of the element the seed's click landed on (the DOM's box, from the click's observation), or, when
the screen shows no other control, at a point just beside that box.

P.1 (misread content): the seed's step a_t types a value the page renders; the note asks for that
value as it is easily misread on a screen (``l``/``I``, ``O``/``0``, ``rn``/``m``, ...), never a
value the page also shows.

Both need the step's request to carry a screenshot; the step's own image is read back from the image
store by its sha256 (:mod:`failforge.images`).
"""

from __future__ import annotations

import random
from typing import Any

from failforge.images import ImageMissing, ImageStore, last_image
from failforge.judgement import clicked_box
from failforge.trajectory import Trajectory

_CONFUSABLE: tuple[tuple[str, str], ...] = (
    ("rn", "m"),
    ("m", "rn"),
    ("l", "I"),
    ("I", "l"),
    ("O", "0"),
    ("0", "O"),
    ("1", "l"),
    ("5", "S"),
    ("S", "5"),
    ("e", "c"),
    ("c", "e"),
    ("a", "o"),
    ("o", "a"),
    ("u", "v"),
    ("v", "u"),
    ("n", "h"),
    ("h", "n"),
    ("i", "j"),
    ("B", "8"),
    ("8", "B"),
    ("g", "q"),
    ("q", "g"),
    ("d", "cl"),
    ("w", "vv"),
    ("E", "F"),
    ("F", "E"),
    ("P", "R"),
    ("R", "P"),
    ("C", "G"),
    ("G", "C"),
)


def _call(seed: Trajectory, t: int, name: str) -> dict[str, Any] | None:
    for call in seed.steps[t].tool_calls:
        args = call.parsed_arguments() or {}
        if call.name == name and "bid" not in args:
            return args
    return None


def _screenshot(seed: Trajectory, t: int) -> bytes | str:
    call = seed.steps[t].model_call
    if call is None:
        return "a_t has no recorded model request"
    try:
        png = last_image(call.request, ImageStore())
    except ImageMissing as exc:
        return str(exc)
    return png if png is not None else "the step's input has no screenshot"


def p2_note(seed: Trajectory, t: int, rng: random.Random) -> tuple[str, dict[str, Any]] | str:
    args = _call(seed, t, "click")
    if args is None or not isinstance(args.get("x"), int) or not isinstance(args.get("y"), int):
        return "a_t is no coordinate click, so there is no point to misplace"
    hit = clicked_box(seed, t)
    if hit is None:
        return "the seed's observation after a_t names no clicked element box"
    (left, top, width, height), target = hit
    png = _screenshot(seed, t)
    if isinstance(png, str):
        return png
    from failforge.environments.miniwob import read_screen

    def outside(x: int, y: int) -> bool:
        return not (left <= x < left + width and top <= y < top + height)

    others = [w for w in read_screen(png).widgets if outside(*w.box.centre)]
    if others:
        other = others[rng.randrange(len(others))]
        x, y = other.box.centre
        what = f"the {other.kind} labelled '{other.label}'" if other.label else f"the {other.kind}"
        note = f"Click at ({x}, {y}), where {what} is drawn on the screen."
        return note, {
            "point": [x, y],
            "original_point": [args["x"], args["y"]],
            "target": target,
            "target_box": [left, top, width, height],
            "chosen": {
                "kind": other.kind,
                "label": other.label,
                "box": [other.box.x, other.box.y, other.box.w, other.box.h],
            },
        }
    x, y = min(left + width + 6, 159), top + height // 2
    if not outside(x, y):
        x, y = left + width // 2, min(top + height + 6, 209)
    if not outside(x, y):
        return "the target fills the task area: there is no point beside it"
    note = f"Click at ({x}, {y}), just beside the control."
    return note, {
        "point": [x, y],
        "original_point": [args["x"], args["y"]],
        "target": target,
        "target_box": [left, top, width, height],
        "chosen": None,
    }


def misreadings(value: str) -> list[str]:
    """Every single confusable substitution of ``value`` (in order of position, then of the table)."""
    out: list[str] = []
    for i in range(len(value)):
        for old, new in _CONFUSABLE:
            if value.startswith(old, i):
                out.append(value[:i] + new + value[i + len(old) :])
    return list(dict.fromkeys(v for v in out if v != value))


def p1_note(seed: Trajectory, t: int, rng: random.Random) -> tuple[str, dict[str, Any]] | str:
    args = _call(seed, t, "type")
    if args is None or not isinstance(args.get("text"), str) or not args["text"]:
        return "a_t types no value, so there is no rendered value to misread"
    value = str(args["text"])
    page = seed.task.instruction
    if value not in page:
        return f"the value {value!r} a_t types is not rendered on the page"
    if isinstance(_screenshot(seed, t), str):
        return "the step's input has no screenshot"
    options = [v for v in misreadings(value) if v not in page]
    if not options:
        return f"no plausible misreading of {value!r}"
    misread = options[rng.randrange(len(options))]
    note = f"Type '{misread}', the value as it reads on the screen."
    return note, {"original": value, "value": misread}


PERCEPTION_RULES = {"P.1": p1_note, "P.2": p2_note}
