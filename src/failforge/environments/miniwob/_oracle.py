"""Scripted demonstration policies for MiniWoB++ tasks: they read the page text, like a model would.

A policy sees only what the model sees in its request: the task utterance (first user message), the
latest observation (the last tool result, or the page in the instruction) and its own earlier tool
calls. It returns the next tool call, or None once its last action is done (the harness then gets a
final message). Policies never look at the page directly nor at MiniWoB's answer, so a demonstration
seed is a run a perfect model could have produced from its own inputs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from failforge.environments.miniwob._dom import ObservedNode, parse_observation
from failforge.errors import FailforgeError

Action = tuple[str, dict[str, Any]]


class OracleError(FailforgeError):
    """A scripted policy could not find what it needs on the page (the policy, not the seed, is wrong)."""


@dataclass
class View:
    """What a policy reads: utterance, current page nodes, its past tool calls."""

    utterance: str
    nodes: list[ObservedNode]
    history: list[Action] = field(default_factory=list)

    # -- lookup helpers ---------------------------------------------------------------------
    def find_all(
        self,
        tag: str | None = None,
        *,
        text: str | None = None,
        id: str | None = None,
        cls: str | None = None,
        attr: tuple[str, str] | None = None,
        within: ObservedNode | None = None,
    ) -> list[ObservedNode]:
        pool = self.children(within, deep=True) if within is not None else self.nodes
        out = []
        for n in pool:
            if tag is not None and n.tag != tag:
                continue
            if text is not None and n.text != text:
                continue
            if id is not None and n.id != id:
                continue
            if cls is not None and not n.has_class(cls):
                continue
            if attr is not None and n.attrs.get(attr[0]) != attr[1]:
                continue
            out.append(n)
        return out

    def find(self, tag: str | None = None, **kw: Any) -> ObservedNode | None:
        hits = self.find_all(tag, **kw)
        return hits[0] if hits else None

    def need(self, tag: str | None = None, **kw: Any) -> ObservedNode:
        node = self.find(tag, **kw)
        if node is None:
            raise OracleError(f"oracle: no {tag or 'element'} {kw} on the page for {self.utterance!r}")
        return node

    def children(self, node: ObservedNode | None, *, deep: bool = False) -> list[ObservedNode]:
        if node is None:
            return []
        i = self.nodes.index(node)
        out = []
        for n in self.nodes[i + 1 :]:
            if n.depth <= node.depth:
                break
            if deep or n.depth == node.depth + 1:
                out.append(n)
        return out

    def clicked(self, bid: str) -> bool:
        return any(name == "click" and str(args.get("bid")) == bid for name, args in self.history)

    def done_with(self, name: str, **args: Any) -> bool:
        return any(n == name and all(str(a.get(k)) == str(v) for k, v in args.items()) for n, a in self.history)

    def quoted(self) -> list[str]:
        return re.findall(r'"([^"]*)"', self.utterance)


def click(node: ObservedNode) -> Action:
    return ("click", {"bid": node.bid})


def type_(node: ObservedNode, text: str) -> Action:
    return ("type", {"bid": node.bid, "text": text})


def _once(view: View, action: Action) -> Action | None:
    """``action`` unless it was already done: the last action of a plan ends the policy."""
    name, args = action
    return None if view.done_with(name, **args) else action


def _last_click(v: View, tag: str | None = None, **kw: Any) -> Action | None:
    """The plan's final click, once; if its target is gone after earlier actions, the plan is over."""
    node = v.find(tag, **kw)
    if node is None:
        if v.history:
            return None
        v.need(tag, **kw)
    assert node is not None
    return _once(v, click(node))


def _sequence(view: View, steps: list[Callable[[], Action]]) -> Action | None:
    """Run ``steps`` in order, one per call: the k-th call (k = actions so far) performs step k."""
    k = len(view.history)
    return steps[k]() if k < len(steps) else None


# ------------------------------------------------------------------------------------ policies


def click_button(v: View) -> Action | None:
    return _sequence(v, [lambda: click(v.need("button", text=v.quoted()[0]))])


def click_link(v: View) -> Action | None:
    return _sequence(v, [lambda: click(v.need("span", cls="alink", text=v.quoted()[0]))])


def click_dialog(v: View) -> Action | None:
    return _sequence(v, [lambda: click(v.need("button", cls="ui-dialog-titlebar-close"))])


def click_dialog_2(v: View) -> Action | None:
    label = v.quoted()[0]
    if label == "x":
        return _sequence(v, [lambda: click(v.need("button", cls="ui-dialog-titlebar-close"))])
    return _sequence(v, [lambda: click(v.need("button", text=label))])


def _checkbox_of(v: View, label: ObservedNode) -> ObservedNode:
    for child in v.children(label):
        if child.tag == "input":
            return child
    raise OracleError(f"oracle: label [{label.bid}] {label.text!r} has no input")


def click_checkboxes(v: View) -> Action | None:
    m = re.match(r"Select (.*) and click Submit\.", v.utterance)
    if not m:
        raise OracleError(f"oracle: cannot parse {v.utterance!r}")
    wanted = set() if m.group(1) == "nothing" else set(m.group(1).split(", "))
    for label in v.find_all("label"):
        box = _checkbox_of(v, label)
        if (label.text in wanted) != ("checked" in box.flags):
            return click(box)
    return _last_click(v, "button", id="subbtn")


def click_option(v: View) -> Action | None:
    m = re.match(r"Select (.*) and click Submit\.", v.utterance)
    if not m:
        raise OracleError(f"oracle: cannot parse {v.utterance!r}")
    radio = _checkbox_of(v, v.need("label", text=m.group(1)))
    if "checked" not in radio.flags:
        return click(radio)
    return _last_click(v, "button", id="subbtn")


def enter_text(v: View) -> Action | None:
    text = v.quoted()[0]
    return _sequence(v, [lambda: type_(v.need("input", id="tt"), text), lambda: click(v.need("button", id="subbtn"))])


def enter_text_2(v: View) -> Action | None:
    text = v.quoted()[0]
    text = text.upper() if "upper case" in v.utterance else text.lower()
    return _sequence(v, [lambda: type_(v.need("input", id="tt"), text), lambda: click(v.need("button", id="subbtn"))])


def enter_password(v: View) -> Action | None:
    password = v.quoted()[0]
    return _sequence(
        v,
        [
            lambda: type_(v.need("input", id="password"), password),
            lambda: type_(v.need("input", id="verify"), password),
            lambda: click(v.need("button", id="subbtn")),
        ],
    )


def login_user(v: View) -> Action | None:
    user, password = v.quoted()[:2]
    return _sequence(
        v,
        [
            lambda: type_(v.need("input", id="username"), user),
            lambda: type_(v.need("input", id="password"), password),
            lambda: click(v.need("button", id="subbtn")),
        ],
    )


def focus_text(v: View) -> Action | None:
    return _sequence(v, [lambda: click(v.need("input", id="tt"))])


def click_tab(v: View) -> Action | None:
    m = re.search(r"Tab #(\d+)", v.utterance)
    if not m:
        raise OracleError(f"oracle: cannot parse {v.utterance!r}")
    return _sequence(v, [lambda: click(v.need("a", text=f"Tab #{m.group(1)}"))])


def _link_or_next(v: View, opener_tag: str, opener_filter: Callable[[ObservedNode], bool]) -> Action | None:
    """Click the wanted link when it is visible, else open the next section/tab not opened yet."""
    target = v.find("span", cls="alink", text=v.quoted()[0])
    if target is not None:
        return _once(v, click(target))
    for opener in v.find_all(opener_tag):
        if opener_filter(opener) and not v.clicked(opener.bid):
            return click(opener)
    raise OracleError(f"oracle: link {v.quoted()[0]!r} not found after opening every section")


def click_tab_2(v: View) -> Action | None:
    return _link_or_next(v, "a", lambda n: n.text.startswith("Tab #"))


def click_collapsible(v: View) -> Action | None:
    header = v.need("h3")
    return _sequence(v, [lambda: click(header), lambda: click(v.need("button", id="subbtn"))])


def click_collapsible_2(v: View) -> Action | None:
    return _link_or_next(v, "h3", lambda n: n.text.startswith("Section"))


def choose_list(v: View) -> Action | None:
    m = re.match(r"Select (.*) from the list and click Submit\.", v.utterance)
    if not m:
        raise OracleError(f"oracle: cannot parse {v.utterance!r}")
    return _sequence(
        v,
        [
            lambda: ("select", {"bid": v.need("select", id="options").bid, "option": m.group(1)}),
            lambda: click(v.need("button", text="Submit")),
        ],
    )


def navigate_tree(v: View) -> Action | None:
    name = v.quoted()[0]
    target = v.find("span", text=name)
    if target is not None:
        return _once(v, click(target))
    for folder in v.find_all("span", cls="folder"):
        if not v.clicked(folder.bid):
            return click(folder)
    raise OracleError(f"oracle: {name!r} not in the tree after opening every folder")


def enter_date(v: View) -> Action | None:
    m = re.search(r"(\d\d)/(\d\d)/(\d{4})", v.utterance)
    if not m:
        raise OracleError(f"oracle: cannot parse {v.utterance!r}")
    iso = f"{m.group(3)}-{m.group(1)}-{m.group(2)}"
    return _sequence(v, [lambda: type_(v.need("input", id="tt"), iso), lambda: click(v.need("button", id="subbtn"))])


def use_spinner(v: View) -> Action | None:
    m = re.search(r"Select (-?\d+) with the spinner", v.utterance)
    if not m:
        raise OracleError(f"oracle: cannot parse {v.utterance!r}")
    want = int(m.group(1))
    current = int(v.need("input", id="spinner").attrs.get("value") or 0)
    if current < want:
        return click(v.need("a", cls="ui-spinner-up"))
    if current > want:
        return click(v.need("a", cls="ui-spinner-down"))
    return _last_click(v, "button", id="subbtn")


def click_button_sequence(v: View) -> Action | None:
    return _sequence(v, [lambda: click(v.need("button", text="ONE")), lambda: click(v.need("button", text="TWO"))])


def click_widget(v: View) -> Action | None:
    kind = v.quoted()[0]
    return _sequence(v, [lambda: click(v.need(attr=("data-type", kind)))])


def _email_sender(v: View) -> str:
    m = re.match(r"Find the email by (.+?) and ", v.utterance)
    if not m:
        raise OracleError(f"oracle: cannot parse {v.utterance!r}")
    return m.group(1)


def _open_email(v: View) -> tuple[ObservedNode | None, Action | None]:
    """The open email view, or the click that opens the sender's email."""
    email = v.find("div", id="email")
    if email is not None:
        return email, None
    sender = _email_sender(v)
    for thread in v.find_all("div", cls="email-thread"):
        if any(c.has_class("email-sender") and c.text == sender for c in v.children(thread, deep=True)):
            return None, click(thread)
    raise OracleError(f"oracle: no email from {sender!r} in the inbox")


def _email_icon(cls: str) -> Callable[[View], Action | None]:
    def policy(v: View) -> Action | None:
        email, opening = _open_email(v)
        if opening is not None:
            return opening
        return _last_click(v, "span", cls=cls, within=email)

    return policy


def _email_compose(v: View, field: ObservedNode | None, text: str, opener_cls: str, send_id: str) -> Action | None:
    """Open the sender's email, open the reply/forward form, fill it, send: one step per call."""
    if field is not None:
        if field.attrs.get("value") != text:
            return type_(field, text)
        return _last_click(v, "span", id=send_id)
    email, opening = _open_email(v)
    if opening is not None:
        return opening
    return click(v.need("span", cls=opener_cls, within=email))


def email_inbox_forward(v: View) -> Action | None:
    m = re.search(r"forward that email to (.+?)\.$", v.utterance)
    if not m:
        raise OracleError(f"oracle: cannot parse {v.utterance!r}")
    return _email_compose(v, v.find("input", cls="forward-sender"), m.group(1), "email-forward", "send-forward")


def email_inbox_reply(v: View) -> Action | None:
    return _email_compose(v, v.find("textarea", id="reply-text"), v.quoted()[0], "email-reply", "send-reply")


#: task name -> policy. Varied kinds: clicks, dialogs, checkboxes/radios, text entry, forms,
#: tabs and collapsibles (navigation inside the page), lists, trees, widgets, a date, a spinner, email.
POLICIES: dict[str, Callable[[View], Action | None]] = {
    "click-button": click_button,
    "click-link": click_link,
    "click-dialog": click_dialog,
    "click-dialog-2": click_dialog_2,
    "click-checkboxes": click_checkboxes,
    "click-option": click_option,
    "enter-text": enter_text,
    "enter-text-2": enter_text_2,
    "enter-password": enter_password,
    "login-user": login_user,
    "focus-text": focus_text,
    "click-tab": click_tab,
    "click-tab-2": click_tab_2,
    "click-collapsible": click_collapsible,
    "click-collapsible-2": click_collapsible_2,
    "choose-list": choose_list,
    "navigate-tree": navigate_tree,
    "enter-date": enter_date,
    "use-spinner": use_spinner,
    "click-button-sequence": click_button_sequence,
    "click-widget": click_widget,
    "email-inbox-delete": _email_icon("trash"),
    "email-inbox-important": _email_icon("star"),
    "email-inbox-forward": email_inbox_forward,
    "email-inbox-reply": email_inbox_reply,
}

DEMO_TASKS: tuple[str, ...] = tuple(POLICIES)


def view_from_request(body: dict[str, Any], page_header: str) -> View:
    """Rebuild what the model saw from a chat-completions request body."""
    messages = body.get("messages") or []
    users = [m for m in messages if m.get("role") == "user"]
    if not users:
        raise OracleError("oracle: the request has no user message")
    instruction = str(users[0].get("content") or "")
    utterance, _, page = instruction.partition(page_header)
    history: list[Action] = []
    latest = page
    for message in messages:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or []:
                fn = call.get("function") or {}
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except json.JSONDecodeError:
                    args = {}
                history.append((str(fn.get("name")), args if isinstance(args, dict) else {}))
        elif message.get("role") == "tool":
            latest = str(message.get("content") or "")
    return View(utterance=utterance.strip(), nodes=parse_observation(latest), history=history)
