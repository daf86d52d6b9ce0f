"""A deterministic vision policy for tests: it finds its targets in the screenshot's pixels.

It plays the model for the screenshot harness (``failforge.miniwob_vision``, observation ``image``)
and is a pure function of the request: the task utterance (the first user message's text), the
latest screenshot (the last ``image_url`` part, decoded PNG) and its own earlier tool calls. It never
reads the DOM. What it sees is found by image processing on the PNG: Chromium's form controls are
drawn with a gray (118, 118, 118) outline, so connected components of that colour (scipy.ndimage)
give the buttons (face 239), text fields (white inside) and check boxes (small squares); their
labels and the page's words come from Tesseract OCR (``tesseract`` CLI, Debian ``tesseract-ocr``) on
the upscaled task area. Colours named by the utterance are matched against CSS colours.

It solves the MiniWoB++ tasks in :data:`VISION_TASKS` (measured by ``scripts/vision_seeds.py``); on
any other task, or when it cannot find its target, it raises :class:`VisionPolicyError` naming what
it looked for, so a seed is never recorded from a guess.
"""

from __future__ import annotations

import functools
import io
import json
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from failforge.errors import FailforgeError
from failforge.images import last_image

#: MiniWoB's task area: 160 x 160 px under the 50 px utterance band.
AREA = (0, 50, 160, 210)
_SCALE = 4
Action = tuple[str, dict[str, Any]]


class VisionPolicyError(FailforgeError):
    """The vision policy could not find its target in the screenshot (the policy, not the seed, is wrong)."""


@dataclass(frozen=True)
class Box:
    x: int
    y: int
    w: int
    h: int

    @property
    def centre(self) -> tuple[int, int]:
        return self.x + self.w // 2, self.y + self.h // 2


@dataclass(frozen=True)
class Widget:
    kind: str  # "button" | "field" | "checkbox"
    box: Box
    label: str = ""


@dataclass(frozen=True)
class Word:
    text: str
    box: Box


@dataclass
class Screen:
    """What the policy read off one screenshot."""

    pixels: Any  # numpy uint8 array (H, W, 3)
    widgets: list[Widget]
    words: list[Word] = field(default_factory=list)
    #: the policy's own earlier actions (from the request), for steps that depend on where it clicked
    history: list[Action] = field(default_factory=list)

    def buttons(self) -> list[Widget]:
        return [w for w in self.widgets if w.kind == "button"]

    def fields(self) -> list[Widget]:
        return sorted((w for w in self.widgets if w.kind == "field"), key=lambda w: (w.box.y, w.box.x))

    def checkboxes(self) -> list[Widget]:
        return sorted((w for w in self.widgets if w.kind == "checkbox"), key=lambda w: (w.box.y, w.box.x))

    def button(self, label: str) -> Widget:
        want = _norm(label)
        hits = [b for b in self.buttons() if _norm(b.label) == want]
        if not hits:
            raise VisionPolicyError(
                f"vision policy: no button labelled {label!r} on the screen (buttons read:"
                f" {[b.label for b in self.buttons()]})"
            )
        return hits[0]

    def word(self, text: str) -> Word:
        want = _norm(text)
        hits = [w for w in self.words if _norm(w.text) == want]
        if not hits:  # OCR slips a letter now and then: the closest word, if it is close
            import difflib

            scored = sorted(
                ((difflib.SequenceMatcher(None, _norm(w.text), want).ratio(), i) for i, w in enumerate(self.words)),
                reverse=True,
            )
            hits = [self.words[i] for ratio, i in scored[:1] if ratio >= 0.75]
        if not hits:
            raise VisionPolicyError(
                f"vision policy: no word {text!r} on the screen (read: {[w.text for w in self.words][:30]})"
            )
        return hits[0]


def _norm(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.lower())


def tesseract_available() -> bool:
    return shutil.which("tesseract") is not None


def _ocr(image: Any, psm: int) -> list[Word]:
    """Words and their boxes (in the given image's pixels / _SCALE) by Tesseract."""
    if not tesseract_available():
        raise VisionPolicyError(
            "the vision policy needs the tesseract CLI (Debian tesseract-ocr): bash scripts/install_vision.sh"
        )
    from PIL import Image

    big = image.convert("L").resize((image.width * _SCALE, image.height * _SCALE), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    big.save(buf, format="PNG")
    out = subprocess.run(
        ["tesseract", "-", "-", "--psm", str(psm), "tsv"],
        input=buf.getvalue(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    words = []
    for line in out.stdout.decode("utf-8", "replace").splitlines()[1:]:
        cols = line.split("\t")
        if len(cols) < 12 or not cols[11].strip() or float(cols[10]) < 0:
            continue
        left, top, width, height = (int(c) // _SCALE for c in cols[6:10])
        words.append(Word(cols[11].strip(), Box(left, top, max(1, width), max(1, height))))
    return words


def read_screen(png: bytes, *, with_words: bool = False) -> Screen:
    """Find the form controls (and, if asked, the words) in a MiniWoB++ screenshot."""
    import numpy as np
    from PIL import Image
    from scipy import ndimage

    image = Image.open(io.BytesIO(png)).convert("RGB")
    pixels = np.asarray(image)
    x0, y0, x1, y1 = AREA
    area = pixels[y0:y1, x0:x1].astype(int)
    gray = area.mean(axis=2)
    flat = (area.max(axis=2) - area.min(axis=2)) <= 6  # no hue: control outlines, not coloured content
    edge = flat & (gray >= 100) & (gray <= 200)
    # straight strokes of 10+ px only (box sides; glyph edges are shorter or not both ways), corners joined by growing
    # one px
    outline = ndimage.binary_opening(edge, structure=np.ones((1, 10), bool)) | ndimage.binary_opening(
        edge, structure=np.ones((10, 1), bool)
    )
    labels, count = ndimage.label(
        ndimage.binary_dilation(outline, structure=np.ones((3, 3), bool)), structure=np.ones((3, 3), int)
    )
    widgets: list[Widget] = []
    for index, found in enumerate(ndimage.find_objects(labels), start=1):
        if found is None:
            continue
        ys, xs = found
        h, w = ys.stop - ys.start - 2, xs.stop - xs.start - 2  # minus the grown pixel on each side
        ys, xs = slice(ys.start + 1, ys.stop - 1), slice(xs.start + 1, xs.stop - 1)
        found = (ys, xs)
        if w < 8 or h < 8:
            continue
        ring = int(((labels[found] == index) & outline[found]).sum())
        if ring < (w + h):  # not an outline (a glyph, a line)
            continue
        inner = area[ys.start + 3 : ys.stop - 3, xs.start + 3 : xs.stop - 3]
        if inner.size and int(np.median(inner)) >= 250:  # white inside: a text field or a check box
            box = Box(xs.start + x0, ys.start + y0, w, h)
            widgets.append(Widget("checkbox" if w <= 18 and h <= 18 else "field", box))
    # buttons by their face: Chromium fills a default <button> with (239, 239, 239), jQuery UI with (246, 246, 246)
    face = flat & (
        ((gray >= 237) & (gray <= 240)) | (np.abs(gray - 246) <= 1)
    )  # Chromium's <button>; jQuery UI's ui-state-default
    face_labels, _ = ndimage.label(face)
    for found in ndimage.find_objects(face_labels):
        if found is None:
            continue
        ys, xs = found
        w, h = xs.stop - xs.start, ys.stop - ys.start
        if w < 12 or h < 10 or int(face[found].sum()) < 0.5 * w * h:
            continue
        box = Box(xs.start + x0 - 1, ys.start + y0 - 1, w + 2, h + 2)
        crop = image.crop((box.x + 2, box.y + 2, box.x + box.w - 2, box.y + box.h - 2))
        widgets.append(Widget("button", box, " ".join(w.text for w in _ocr(crop, 7))))
    words = []
    if with_words:
        crop = image.crop(AREA)
        words = [Word(w.text, Box(w.box.x + x0, w.box.y + y0, w.box.w, w.box.h)) for w in _ocr(crop, 11)]
    return Screen(pixels=pixels, widgets=widgets, words=words)


# ---------------------------------------------------------------------------------- the request


def _utterance(body: dict[str, Any]) -> str:
    for message in body.get("messages", []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                texts = [str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"]
                return texts[0].split("\n\nPage:\n")[0].strip() if texts else ""
            return str(content or "").split("\n\nPage:\n")[0].strip()
    return ""


def _history(body: dict[str, Any]) -> list[Action]:
    out: list[Action] = []
    for message in body.get("messages", []):
        if isinstance(message, dict) and message.get("role") == "assistant":
            for call in message.get("tool_calls") or []:
                fn = call.get("function") or {}
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    args = {}
                out.append((str(fn.get("name")), args))
    return out


def _click(target: Widget | Word | Box) -> Action:
    box = target if isinstance(target, Box) else target.box
    x, y = box.centre
    return "click", {"x": x, "y": y}


# ---------------------------------------------------------------------------------- the tasks

Plan = Callable[[str, list[Action], Callable[[], Screen]], Action | None]


def _sequence(
    steps: list[Callable[[Screen], Action]], words: bool = False
) -> Callable[[list[Action], Callable[..., Screen]], Action | None]:
    def run(history: list[Action], screen: Callable[..., Screen]) -> Action | None:
        if len(history) >= len(steps):
            return None
        seen = screen(words)
        seen.history = history
        return steps[len(history)](seen)

    return run


def _quoted(utterance: str, n: int = 0) -> str:
    found = re.findall(r'"([^"]*)"', utterance)
    if len(found) <= n:
        raise VisionPolicyError(f"vision policy: no quoted text #{n} in {utterance!r}")
    return found[n]


def _plan(utterance: str) -> Callable[[list[Action], Callable[..., Screen]], Action | None]:
    u = utterance
    if re.fullmatch(r"Click on the \".*\" button\.", u):
        label = _quoted(u)
        return _sequence([lambda s: _click(s.button(label))])
    if u == "Click the button.":
        return _sequence([lambda s: _click(_nth(s.buttons(), 0, "button"))])
    m = re.fullmatch(r"Click button (\w+)\.", u)
    if m:
        one = m.group(1)
        return _sequence([lambda s: _click(s.button(one))])
    m = re.fullmatch(r"Click button (\w+), then click button (\w+)\.", u)
    if m:
        first, second = m.group(1), m.group(2)
        return _sequence([lambda s: _click(s.button(first)), lambda s: _click(s.button(second))])
    m = re.fullmatch(r"Enter \"(.*)\" into the text field and press Submit\.", u)
    if m:
        text = m.group(1)
        return _sequence(
            [
                lambda s: _click(_nth(s.fields(), 0, "text field")),
                lambda s: ("type", {"text": text}),
                lambda s: _click(s.button("Submit")),
            ]
        )
    m = re.fullmatch(r"Type \"(.*)\" in all (lower|upper) case letters in the text input and press Submit\.", u)
    if m:
        text = m.group(1).lower() if m.group(2) == "lower" else m.group(1).upper()
        return _sequence(
            [
                lambda s: _click(_nth(s.fields(), 0, "text field")),
                lambda s: ("type", {"text": text}),
                lambda s: _click(s.button("Submit")),
            ]
        )
    m = re.fullmatch(r"Enter the password \"(.*)\" into both text fields and press submit\.", u)
    if m:
        pw = m.group(1)
        return _sequence(
            [
                lambda s: _click(_nth(s.fields(), 0, "text field")),
                lambda s: ("type", {"text": pw}),
                lambda s: _click(_field_below(s)),
                lambda s: ("type", {"text": pw}),
                lambda s: _click(s.button("Submit")),
            ]
        )
    m = re.fullmatch(r"Enter the username \"(.*)\" and the password \"(.*)\" into the text fields and press login\.", u)
    if m:
        user, pw = m.group(1), m.group(2)
        return _sequence(
            [
                lambda s: _click(_nth(s.fields(), 0, "text field")),
                lambda s: ("type", {"text": user}),
                lambda s: _click(_field_below(s)),
                lambda s: ("type", {"text": pw}),
                lambda s: _click(s.button("Login")),
            ]
        )
    if u == "Focus into the textbox.":
        return _sequence([lambda s: _click(_nth(s.fields(), 0, "text field"))])
    m = re.fullmatch(r"Focus into the (\d)(?:st|nd|rd|th) input textbox\.", u)
    if m:
        n = int(m.group(1)) - 1
        return _sequence([lambda s: _click(_nth(s.fields(), n, "text field"))])
    m = re.fullmatch(r"Select (.*) and click Submit\.", u)
    if m:
        names = [] if m.group(1) == "nothing" else [n.strip() for n in re.split(r",\s*", m.group(1)) if n.strip()]
        steps: list[Callable[[Screen], Action]] = [_checkbox_step(n) for n in names]
        return _sequence([*steps, lambda s: _click(s.button("Submit"))], words=True)
    m = re.fullmatch(r"Click on the (\w+) colored box\.", u)
    if m:
        colour = m.group(1)
        return _sequence([lambda s: _click(_colour_box(s, colour))])
    m = re.fullmatch(r"Click on the link \"(.*)\"\.", u)
    if m:
        return _sequence([lambda s: _click(s.word(_quoted(u)))], words=True)
    m = re.fullmatch(r"Click on a \"(checkbox|button)\" widget\.", u)
    if m:
        kind = m.group(1)
        return _sequence([lambda s: _click(_nth(s.checkboxes() if kind == "checkbox" else s.buttons(), 0, kind))])
    if u == "Solve the math problem and type your answer into the textbox. Press submit when done.":
        return _sequence(
            [
                lambda s: _click(_nth(s.fields(), 0, "text field")),
                lambda s: ("type", {"text": _arithmetic(s)}),
                lambda s: _click(s.button("Submit")),
            ],
            words=True,
        )
    if u == 'Close the dialog box by clicking the "x".':
        return _sequence([lambda s: _click(_close_glyph(s))])
    m = re.fullmatch(r"Click the button in the dialog box labeled \"(.*)\"\.", u)
    if m:
        label = m.group(1)
        return _sequence([lambda s: _click(_close_glyph(s) if label == "x" else s.button(label))])
    m = re.fullmatch(r"Click on Tab #(\d+)\.", u)
    if m:
        number = m.group(1)
        return _sequence([lambda s: _click(_tab(s, number))], words=True)
    if u == "Expand the section below and click submit.":
        return _sequence([lambda s: _click(_colour_box(s, "ui-active")), lambda s: _click(s.button("Submit"))])
    m = re.fullmatch(r"Enter (\d\d/\d\d/\d{4}) as the date and hit submit\.", u)
    if m:
        date = m.group(1)
        return _sequence(
            [
                lambda s: _click(_field_start(s)),
                lambda s: ("type", {"text": date}),
                lambda s: _click(s.button("Submit")),
            ]
        )
    m = re.fullmatch(r"Enter (\d{1,2}):(\d\d) (AM|PM) as the time and press submit\.", u)
    if m:
        keys = f"{int(m.group(1)):02d}{m.group(2)}{m.group(3)[0]}"
        return _sequence(
            [
                lambda s: _click(_field_start(s)),
                lambda s: ("type", {"text": keys}),
                lambda s: _click(s.button("Submit")),
            ]
        )
    raise VisionPolicyError(f"vision policy: no plan for the task {u!r}")


def _field_start(screen: Screen) -> Box:
    """The first segment of a date/time field (a click at its left end focuses the month/hour)."""
    box = _nth(screen.fields(), 0, "text field").box
    return Box(box.x + 4, box.y, 12, box.h)


def _field_below(screen: Screen) -> Widget:
    """The next text field below the one the policy last clicked (a focused field is drawn with a focus ring, not
    the gray outline, so it may be missing from the fields found; the one below it is not)."""
    clicks = [a for name, a in screen.history if name == "click"]
    last_y = int(clicks[-1]["y"]) if clicks else -1
    below = [f for f in screen.fields() if f.box.y > last_y]
    return _nth(below, 0, "text field below the last click")


def _tab(screen: Screen, number: str) -> Widget | Word:
    tabs = [b for b in screen.buttons() if _norm(b.label) == _norm(f"Tab #{number}")]
    if tabs:
        return tabs[0]
    return screen.word(f"#{number}")


def _arithmetic(screen: Screen) -> str:
    text = " ".join(w.text for w in screen.words).replace("x", "*").replace("\u2014", "-").replace("\u2013", "-")
    found = re.search(r"(-?\d+)\s*([+*-])\s*(-?\d+)\s*=", text)
    if not found:
        raise VisionPolicyError(f"vision policy: no arithmetic problem read on the screen ({text!r})")
    a, op, b = int(found.group(1)), found.group(2), int(found.group(3))
    return str(a + b if op == "+" else a - b if op == "-" else a * b)


def _close_glyph(screen: Screen) -> Box:
    """The dialog's close button: the dark glyph at the right end of its title bar (the top band of the dialog)."""
    from scipy import ndimage

    dialogs = [w for w in screen.widgets if w.kind == "field" and w.box.h > 60]
    if not dialogs:
        raise VisionPolicyError("vision policy: no dialog box on the screen")
    box = dialogs[0].box
    small = [
        b
        for b in screen.buttons()
        if b.box.w <= 24 and b.box.h <= 24 and box.y <= b.box.y <= box.y + 30 and b.box.x > box.x + box.w // 2
    ]
    if small:
        return small[0].box
    band = screen.pixels[box.y : box.y + 30, box.x + box.w // 2 : box.x + box.w].astype(int).mean(axis=2) < 110
    labels, count = ndimage.label(band)
    if count == 0:
        raise VisionPolicyError("vision policy: no close glyph in the dialog's title bar")
    ys, xs = max(ndimage.find_objects(labels), key=lambda f: f[1].stop)  # type: ignore[arg-type, return-value]
    return Box(box.x + box.w // 2 + xs.start, box.y + ys.start, xs.stop - xs.start, ys.stop - ys.start)


def _checkbox_step(name: str) -> Callable[[Screen], Action]:
    return lambda s: _click(_checkbox_of(s, name))


def _nth(items: list[Widget], n: int, what: str) -> Widget:
    if n >= len(items):
        raise VisionPolicyError(f"vision policy: wanted {what} #{n + 1}, the screen shows {len(items)}")
    return items[n]


def _checkbox_of(screen: Screen, name: str) -> Widget:
    """The check box (or radio) left of the word ``name`` on the same line."""
    word = screen.word(name)
    near = [c for c in screen.checkboxes() if abs(c.box.centre[1] - word.box.centre[1]) <= 8 and c.box.x < word.box.x]
    if not near:  # a radio button is round (no straight outline to find): it is drawn just left of its label
        x, y = word.box.x - 13, word.box.centre[1]
        if x < 0:
            raise VisionPolicyError(f"vision policy: no control left of {name!r}")
        return Widget("radio", Box(x - 6, y - 6, 13, 13))
    return max(near, key=lambda c: c.box.x)


_COLOURS = {
    "red": (255, 0, 0),
    "green": (0, 128, 0),
    "blue": (0, 0, 255),
    "yellow": (255, 255, 0),
    "black": (0, 0, 0),
    "white": (255, 255, 255),
    "grey": (128, 128, 128),
    "gray": (128, 128, 128),
    "purple": (128, 0, 128),
    "orange": (255, 165, 0),
    "pink": (255, 192, 203),
    "brown": (165, 42, 42),
    "cyan": (0, 255, 255),
    "magenta": (255, 0, 255),
    "aqua": (0, 255, 255),
    "lime": (0, 255, 0),
    "ui-active": (0, 127, 255),  # jQuery UI's active header / selected tab
    "maroon": (128, 0, 0),
    "navy": (0, 0, 128),
    "olive": (128, 128, 0),
    "silver": (192, 192, 192),
    "teal": (0, 128, 128),
    "fuchsia": (255, 0, 255),
}


def _colour_box(screen: Screen, name: str) -> Box:
    import numpy as np
    from scipy import ndimage

    rgb = _COLOURS.get(name.lower())
    if rgb is None:
        raise VisionPolicyError(f"vision policy: unknown colour {name!r}")
    x0, y0, x1, y1 = AREA
    area = screen.pixels[y0:y1, x0:x1].astype(int)
    mask = np.abs(area - np.array(rgb)).max(axis=2) <= 2
    labels, _ = ndimage.label(mask)
    best: Box | None = None
    for found in ndimage.find_objects(labels):
        if found is None:
            continue
        ys, xs = found
        box = Box(xs.start + x0, ys.start + y0, xs.stop - xs.start, ys.stop - ys.start)
        if box.w >= 10 and box.h >= 10 and (best is None or box.w * box.h > best.w * best.h):
            best = box
    if best is None:
        raise VisionPolicyError(f"vision policy: no {name} box on the screen")
    return best


# ---------------------------------------------------------------------------------- the responder


_NOTE_CLICK = re.compile(r"Click at \((\d+), (\d+)\)")
_NOTE_TYPE = re.compile(r"Type '(.*)', the value")


def _noted_action(body: dict[str, Any]) -> Action | None:
    """A guidance note at the end of the request (a branch's stage 2), acted on as a model would: the point
    or text it names. Only the last message counts: a note lives in the one request it was added to."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if not isinstance(last, dict) or last.get("role") != "system" or not isinstance(last.get("content"), str):
        return None
    click = _NOTE_CLICK.search(last["content"])
    if click:
        return "click", {"x": int(click.group(1)), "y": int(click.group(2))}
    typed = _NOTE_TYPE.search(last["content"])
    if typed:
        return "type", {"text": typed.group(1)}
    return None


def vision_action(body: dict[str, Any]) -> Action | None:
    """The next action for ``body`` (None: the task is done). Pure: the same request gives the same action."""
    png = last_image(body)
    if png is None:
        raise VisionPolicyError(
            "vision policy: the request carries no screenshot (run the harness with observation='image')"
        )
    steered = _noted_action(body)
    if steered is not None:
        return steered
    plan = _plan(_utterance(body))
    cached = functools.lru_cache(maxsize=2)(lambda words: read_screen(png, with_words=words))
    return plan(_history(body), cached)


def vision_script(ordinal: int, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
    """:func:`vision_action` as an oracle script for :class:`failforge.llm.OracleResponder`."""
    try:
        action = vision_action(body)
    except VisionPolicyError as exc:  # as a model would: it says what it cannot see and stops (never a guessed action)
        return f"I cannot continue: {exc}", None
    if action is None:
        return "Done: the task is complete.", None
    name, args = action
    return None, [
        {"id": f"call_vision_{ordinal}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    ]


#: Tasks the policy has a plan for (how many it solves is measured, not claimed: scripts/vision_seeds.py).
VISION_TASKS = (
    "click-button",
    "click-test",
    "click-test-2",
    "click-button-sequence",
    "enter-text",
    "enter-text-2",
    "enter-password",
    "login-user",
    "focus-text",
    "focus-text-2",
    "click-checkboxes",
    "click-option",
    "click-color",
    "click-link",
    "click-widget",
    "simple-arithmetic",
    "click-dialog",
    "click-dialog-2",
    "click-tab",
    "click-collapsible",
    "enter-text-dynamic",
    "click-test-transfer",
    "click-checkboxes-large",
    "click-checkboxes-transfer",
    "enter-date",
    "enter-time",
)
