"""Plain-text views of steps and contexts, shared by the conformance checks and the leak filter.

Both ask the same questions of text — which numbers does it use, which content words does it share
with something else, what could the agent have seen — so they must answer them the same way. The
lemmatiser is a few suffix rules, not a linguistic one: it only has to make "payment"/"payments" and
"settled"/"settle" meet, and it must not need a model or a download.
"""

from __future__ import annotations

import json
import re
from typing import Any

from failforge.trajectory import Step, Trajectory

STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing done down during each either else even ever every few for
    from further get gets got had has have having he her here hers herself him himself his how however i if in
    into is it its itself just let lets like may me might more most much must my myself no nor not now of off
    on once one only or other our ours ourselves out over own please same shall she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up upon
    us very was we were what when where which while who whom why will with within without would yes yet you
    your yours yourself yourselves im ive id ill youre dont doesnt didnt cant wont isnt arent wasnt s t ll re ve
    d m o okay ok sure well
    """.split()
)

_TOKEN = re.compile(r"\d[\d,]*(?:\.\d+)?|[A-Za-z][A-Za-z0-9_']*")
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])-?\d[\d,]*(?:\.\d+)?(?![A-Za-z_])")
_ENTITY = re.compile(r"&(?:#\d{1,6}|#x[0-9a-fA-F]{1,6}|[A-Za-z]{2,8});")


def normalise_number(text: str) -> str:
    """``"1,050.00"`` -> ``"1050"``, ``"100.0"`` -> ``"100"``: one spelling per value."""
    raw = text.replace(",", "")
    try:
        value = float(raw)
    except ValueError:
        return raw
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def numbers(text: str) -> list[str]:
    """Numbers written in ``text`` (not digits inside identifiers such as IBANs), normalised."""
    return [normalise_number(m.group(0)) for m in _NUMBER.finditer(text or "")]


def lemma(word: str) -> str:
    w = word.lower().strip("'")
    if w.endswith("'s"):
        w = w[:-2]
    w = w.replace("'", "")
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")) and len(w) > 3:
        w = w[:-1]
    if w.endswith("ing") and len(w) > 5:
        w = w[:-3]
    elif w.endswith("ed") and len(w) > 4:
        w = w[:-2]
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


def content_lemmas(text: str) -> set[str]:
    """Content words (lemmatised, stopwords dropped) and numbers (normalised) of ``text``."""
    out: set[str] = set()
    for token in _TOKEN.findall(text or ""):
        if token[0].isdigit():
            out.add(normalise_number(token))
            continue
        low = token.lower().replace("'", "")
        if low in STOPWORDS or len(low) < 3:
            continue
        out.add(lemma(low))
    return out


def words(text: str) -> list[str]:
    """Lower-case word tokens; quotes around a token do not make it another word ('x' == x)."""
    return [w for w in (t.strip("'") for t in re.findall(r"[a-z0-9']+", (text or "").lower())) if w]


def ngrams(tokens: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def entities(text: str) -> set[str]:
    """HTML character references (``&#39;``, ``&quot;``) written literally in ``text``."""
    return set(_ENTITY.findall(text or ""))


def step_text(step: Step, *, calls: bool = True) -> str:
    """What a step says, and (with ``calls``) the tool calls it makes, as one string."""
    parts = [step.content or ""]
    if calls:
        parts += [f"{c.name} {c.arguments}" for c in step.tool_calls]
    if step.kind == "tool":
        parts.append(step.error or "")
    return " ".join(p for p in parts if p)


def _message_text(message: Any) -> str:
    if not isinstance(message, dict):
        return str(message)
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    calls = " ".join(
        f"{(c.get('function') or {}).get('name', '')} {(c.get('function') or {}).get('arguments', '')}"
        for c in message.get("tool_calls") or []
        if isinstance(c, dict)
    )
    return " ".join(p for p in (str(content or ""), calls) if p)


def request_text(request: dict[str, Any]) -> str:
    """Everything a chat-completions request shows the model: messages and the offered tools."""
    parts = [_message_text(m) for m in request.get("messages") or []]
    parts += [json.dumps(t, sort_keys=True) for t in request.get("tools") or []]
    return "\n".join(parts)


def seen_text(seed: Trajectory, t: int) -> str:
    """What the agent had in front of it when it produced step ``t``: its own request, else the prefix.

    Wording found here is not evidence of anything: the agent could have taken it from its context.
    """
    step = seed.steps[t]
    if step.model_call is not None and step.model_call.request.get("messages"):
        return request_text(step.model_call.request) + "\n" + seed.task.instruction
    return "\n".join([seed.task.instruction] + [step_text(s) for s in seed.steps[:t]])


def offered_tools(seed: Trajectory, t: int) -> dict[str, dict[str, Any]]:
    """Name -> JSON schema of the tools offered in the request of step ``t`` (empty when none)."""
    step = seed.steps[t]
    request = step.model_call.request if step.model_call else {}
    out: dict[str, dict[str, Any]] = {}
    for tool in request.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and fn.get("name"):
            out[str(fn["name"])] = fn.get("parameters") or {}
    return out


def action_signature(step: Step) -> str:
    """What the step does, normalised: text plus tool calls with parsed arguments."""
    calls = [
        {"name": c.name, "args": c.parsed_arguments() if c.parsed_arguments() is not None else c.arguments}
        for c in step.tool_calls
    ]
    return json.dumps({"content": " ".join((step.content or "").split()), "calls": calls}, sort_keys=True)


def shown(text: str, content: str | None) -> bool:
    """Whether ``text`` appears in an observation, compared with whitespace collapsed and quoting undone: tools
    render results as YAML (AgentDojo folds long lines and doubles single quotes, double-quoted with escaped line
    breaks) or as a Python repr (newlines as \\n), so both sides are normalised the same way."""

    def norm(value: str) -> str:
        return " ".join(
            re.sub(r"\\\n\s*", "", value).replace("\\ ", " ").replace("\\n", " ").replace("''", "'").split()
        )

    return bool(text.strip()) and norm(text) in norm(content or "")
