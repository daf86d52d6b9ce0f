"""The browser tools an agent calls: click, type, press, select, scroll, goto, answer.

Each tool acts on the page and returns an :class:`ActionOutcome`; the episode then runs the settle
time, reads the page and returns the new observation text (see ``_episode.py``). Elements are named
by their ``bid`` (stamped by ``_dom.py``).

Tool errors are the agent's business, not failforge's: an unknown bid, a hidden element, a bad key
name become an ``error`` the model reads. Their wording is fixed here, never Playwright's own message
(which carries timings and call logs), because the error text is part of the observation that replay
compares byte for byte. A crashed or vanished browser is not a tool error: it escapes as
:class:`~failforge.errors.InfrastructureError` (see ``_browser.BrowserSession.guard``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from failforge.environments.miniwob._browser import BrowserSession


@dataclass(frozen=True)
class ActionOutcome:
    error: str | None = None
    note: str | None = None
    #: A coordinate click: the element at the point (bid, tag, text, box), read before the click.
    hit: dict[str, Any] | None = None


_HIT_JS = """([x, y]) => {
  const el = document.elementFromPoint(x, y);
  if (!el) return null;
  const holder = el.closest('[bid]');
  const r = (holder || el).getBoundingClientRect();
  return {bid: holder ? holder.getAttribute('bid') : null, tag: (holder || el).tagName.toLowerCase(),
          text: ((holder || el).innerText || (holder || el).value || '').replace(/\\s+/g, ' ').trim().slice(0, 80),
          box: [Math.round(r.left), Math.round(r.top), Math.round(r.width), Math.round(r.height)]};
}"""


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _BidArgs(_Args):
    bid: str = Field(description="the element's bid, the number in [brackets] in the page text")

    @field_validator("bid", mode="before")
    @classmethod
    def _bid_text(cls, value: Any) -> Any:
        # Models write bids as numbers as often as strings; "[12]" also happens.
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if isinstance(value, str):
            return value.strip().strip("[]").strip()
        return value


class ClickArgs(_BidArgs):
    pass


class TypeArgs(_BidArgs):
    text: str = Field(description="text that replaces the field's content")


class PressArgs(_Args):
    key: str = Field(description="a key name such as Enter, Tab, ArrowDown, Backspace, or a chord like Control+a")


class SelectArgs(_BidArgs):
    option: str = Field(description="the visible text (or value) of the option to choose")


class ScrollArgs(_Args):
    dx: int = Field(default=0, description="pixels to scroll right (negative: left)")
    dy: int = Field(default=0, description="pixels to scroll down (negative: up)")
    bid: str | None = Field(default=None, description="scroll inside this element instead of the window")

    @field_validator("bid", mode="before")
    @classmethod
    def _bid_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class GotoArgs(_Args):
    url: str = Field(description="an http(s) URL, absolute or relative to the current page")


class AnswerArgs(_Args):
    text: str = Field(description="the answer to report")


TOOLS: dict[str, tuple[type[_Args], str]] = {
    "click": (ClickArgs, "Click the element with this bid."),
    "type": (TypeArgs, "Replace the content of the text field with this bid by the given text."),
    "press": (PressArgs, "Press a key (or key chord) on the focused element."),
    "select": (SelectArgs, "Choose an option of the <select> element with this bid."),
    "scroll": (ScrollArgs, "Scroll the page (or the element with bid) by dx, dy pixels."),
    "goto": (GotoArgs, "Open a URL in the current tab."),
    "answer": (AnswerArgs, "Report a textual answer to the task."),
}


class PointArgs(_Args):
    x: int = Field(ge=0, description="pixels from the screenshot's left edge")
    y: int = Field(ge=0, description="pixels from the screenshot's top edge")


class TextArgs(_Args):
    text: str = Field(description="text typed with the keyboard into the focused element")


class KeyArgs(_Args):
    key: str = Field(description="a key name such as Enter, Tab, ArrowDown, Backspace, or a chord like Control+a")


class ScrollAtArgs(PointArgs):
    dx: int = Field(default=0, description="pixels to scroll right (negative: left)")
    dy: int = Field(default=0, description="pixels to scroll down (negative: up)")


#: The computer-use action space: the agent sees a screenshot and acts by pixel coordinates.
COORDINATE_TOOLS: dict[str, tuple[type[_Args], str]] = {
    "click": (PointArgs, "Click the mouse at pixel (x, y) of the screenshot."),
    "type": (TextArgs, "Type text with the keyboard into the focused element."),
    "key": (KeyArgs, "Press a key (or key chord)."),
    "scroll": (ScrollAtArgs, "Scroll by dx, dy pixels with the mouse at (x, y)."),
    "answer": (AnswerArgs, "Report a textual answer to the task."),
}


def tool_table(action_space: str) -> dict[str, tuple[type[_Args], str]]:
    return COORDINATE_TOOLS if action_space == "coordinate" else TOOLS


def tool_schemas(action_space: str = "bid") -> list[dict[str, Any]]:
    """OpenAI function-calling schemas, in a fixed order (they are part of every recorded request)."""
    out = []
    for name, (model, description) in tool_table(action_space).items():
        schema = model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        out.append({"type": "function", "function": {"name": name, "description": description, "parameters": schema}})
    return out


def parse_arguments(name: str, arguments: dict[str, Any] | None, raw: str, action_space: str = "bid") -> _Args | str:
    """Validated arguments, or a fixed-wording error the model can act on."""
    table = tool_table(action_space)
    spec = table.get(name)
    if spec is None:
        return f"unknown tool {name!r}; the tools are: {', '.join(table)}"
    if arguments is None:
        return f"the arguments of {name} are not a JSON object: {raw[:200]!r}"
    try:
        return spec[0].model_validate(arguments)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors())
        return f"invalid arguments for {name}: {problems}"


class Actions:
    """Performs validated tool calls on one page."""

    def __init__(self, session: BrowserSession, *, origin: str, action_space: str = "bid") -> None:
        self.session = session
        self.action_space = action_space
        self.origin = origin.rstrip("/")
        self.answers: list[str] = []

    @property
    def page(self) -> Any:
        return self.session.page

    def perform(self, name: str, args: _Args) -> ActionOutcome:
        from playwright.sync_api import Error as PlaywrightError

        method = getattr(self, f"_{'xy' if self.action_space == 'coordinate' else 'do'}_{name}")
        with self.session.guard(
            f"running {name}({json.dumps(args.model_dump(), ensure_ascii=False)[:200]})", agent_errors=True
        ):
            try:
                outcome: ActionOutcome = method(args)
            except PlaywrightError as exc:
                infra = self.session.infrastructure_error(exc, f"running {name}")
                if infra is not None:
                    raise infra from exc
                return ActionOutcome(error=f"{name} failed: {_first_line(exc)}")
        return outcome

    # ------------------------------------------------------------------ element tools

    def _locate(self, bid: str) -> tuple[Any, str | None]:
        if not bid.isdigit():
            return None, f"{bid!r} is not a bid; bids are the numbers in [brackets] in the page text"
        locator = self.page.locator(f'[bid="{bid}"]')
        count = locator.count()
        if count == 0:
            return None, f"no element with bid {bid} on the page"
        element = locator.first
        if not element.is_visible():
            return None, f"element [{bid}] is not visible"
        return element, None

    def _do_click(self, args: ClickArgs) -> ActionOutcome:
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        element, error = self._locate(args.bid)
        if error:
            return ActionOutcome(error=error)
        try:
            element.click(timeout=self.session.config.action_timeout_ms)
        except PlaywrightTimeout:
            return ActionOutcome(
                error=f"element [{args.bid}] could not be clicked: another element covers it or it is disabled"
            )
        return ActionOutcome()

    def _do_type(self, args: TypeArgs) -> ActionOutcome:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        element, error = self._locate(args.bid)
        if error:
            return ActionOutcome(error=error)
        editable = element.evaluate(
            "(el) => (el instanceof HTMLInputElement &&"
            " !['checkbox','radio','button','submit','reset','image','file'].includes(el.type)) || el instanceof"
            " HTMLTextAreaElement || el.isContentEditable"
        )
        if not editable:
            return ActionOutcome(error=f"element [{args.bid}] is not a text field")
        try:
            element.fill(args.text, timeout=self.session.config.action_timeout_ms)
        except PlaywrightTimeout:
            return ActionOutcome(error=f"element [{args.bid}] is not editable (disabled or read-only)")
        except PlaywrightError as exc:
            if self.session.infrastructure_error(exc, "typing") is not None:
                raise
            return ActionOutcome(error=f"could not type into element [{args.bid}]: {_first_line(exc)}")
        return ActionOutcome()

    def _do_select(self, args: SelectArgs) -> ActionOutcome:
        element, error = self._locate(args.bid)
        if error:
            return ActionOutcome(error=error)
        found = element.evaluate(
            """(el, wanted) => {
                 if (!(el instanceof HTMLSelectElement)) return {error: 'not-select'};
                 const opts = Array.from(el.options);
                 const norm = (s) => (s || '').replace(/\\s+/g, ' ').trim();
                 let hit = opts.find((o) => norm(o.textContent) === norm(wanted));
                 if (!hit) hit = opts.find((o) => o.value === wanted);
                 return hit ? {value: hit.value} : {error: 'no-option', options: opts.map((o) => norm(o.textContent))};
               }""",
            args.option,
        )
        if found.get("error") == "not-select":
            return ActionOutcome(error=f"element [{args.bid}] is not a <select>")
        if found.get("error") == "no-option":
            return ActionOutcome(
                error=(
                    f"element [{args.bid}] has no option {args.option!r}; its options are"
                    f" {json.dumps(found['options'], ensure_ascii=False)}"
                )
            )
        element.select_option(value=found["value"], timeout=self.session.config.action_timeout_ms)
        return ActionOutcome()

    # ------------------------------------------------------------------ page tools

    def _do_press(self, args: PressArgs) -> ActionOutcome:
        from playwright.sync_api import Error as PlaywrightError

        try:
            self.page.keyboard.press(args.key)
        except PlaywrightError as exc:
            if self.session.infrastructure_error(exc, "pressing a key") is not None:
                raise
            return ActionOutcome(
                error=f"unknown key {args.key!r}; use names like Enter, Tab, ArrowDown, Backspace, a, Control+a"
            )
        return ActionOutcome()

    def _do_scroll(self, args: ScrollArgs) -> ActionOutcome:
        if args.bid is not None:
            element, error = self._locate(args.bid)
            if error:
                return ActionOutcome(error=error)
            element.evaluate("(el, d) => el.scrollBy({left: d[0], top: d[1], behavior: 'instant'})", [args.dx, args.dy])
        else:
            self.page.evaluate(
                "(d) => window.scrollBy({left: d[0], top: d[1], behavior: 'instant'})", [args.dx, args.dy]
            )
        return ActionOutcome()

    def _do_goto(self, args: GotoArgs) -> ActionOutcome:
        from playwright.sync_api import Error as PlaywrightError

        target = urljoin(self.page.url, args.url.strip())
        parts = urlsplit(target)
        if parts.scheme not in ("http", "https"):
            return ActionOutcome(error=f"goto only opens http(s) URLs, not {args.url!r}")
        if f"{parts.scheme}://{parts.netloc}" != self.origin:
            return ActionOutcome(
                error=f"{target} is outside this environment; only {self.origin}/ is served (the browser is offline)"
            )
        try:
            self.page.goto(target, wait_until="load")
        except PlaywrightError as exc:
            if self.session.infrastructure_error(exc, "navigating") is not None:
                raise
            return ActionOutcome(error=f"could not open {target}")
        return ActionOutcome()

    # ------------------------------------------------------------------ coordinate tools (computer use)

    def hit(self, x: int, y: int) -> dict[str, Any] | None:
        """The element drawn at (x, y): its bid, tag, text and box (the DOM's truth about a click there)."""
        found: dict[str, Any] | None = self.page.evaluate(_HIT_JS, [x, y])
        return found

    def _xy_click(self, args: PointArgs) -> ActionOutcome:
        width, height = self.session.config.viewport.width, self.session.config.viewport.height
        if args.x >= width or args.y >= height:
            return ActionOutcome(error=f"({args.x}, {args.y}) is outside the {width}x{height} screen")
        target = self.hit(args.x, args.y)
        self.page.mouse.click(args.x, args.y)
        return ActionOutcome(note=f"clicked at ({args.x}, {args.y})", hit=target)

    def _xy_type(self, args: TextArgs) -> ActionOutcome:
        self.page.keyboard.type(args.text)
        return ActionOutcome()

    def _xy_key(self, args: KeyArgs) -> ActionOutcome:
        return self._do_press(PressArgs(key=args.key))

    def _xy_scroll(self, args: ScrollAtArgs) -> ActionOutcome:
        self.page.mouse.move(args.x, args.y)
        self.page.mouse.wheel(args.dx, args.dy)
        return ActionOutcome()

    def _xy_answer(self, args: AnswerArgs) -> ActionOutcome:
        return self._do_answer(args)

    def _do_answer(self, args: AnswerArgs) -> ActionOutcome:
        self.answers.append(args.text)
        return ActionOutcome(note=f"answer recorded: {args.text}")


def _first_line(exc: BaseException) -> str:
    """Playwright's message without its call log (which carries timings that would break replay)."""
    text = str(exc).split("Call log:")[0].strip().splitlines()
    line = text[0] if text else type(exc).__name__
    for prefix in ("Locator.", "Page.", "Keyboard.", "ElementHandle."):
        if line.startswith(prefix) and ": " in line:
            line = line.split(": ", 1)[1]
    return line[:300]
