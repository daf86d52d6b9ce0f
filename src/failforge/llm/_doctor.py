"""``failforge doctor``: a preflight of an OpenAI-compatible endpoint before a campaign is pointed at it.

Each check makes one or two small real calls (through the model boundary, like every call failforge makes;
streaming goes to the endpoint directly, since the boundary itself never streams upstream) and says what
works and which failforge features a failure disables. A campaign needs chat and single tool calls (every
environment's agent calls tools); anything else narrows what runs or how well, and is reported as such.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

import httpx
from pydantic import BaseModel

from failforge.errors import FailforgeError
from failforge.llm._boundary import ModelBoundary
from failforge.llm._client import ModelEndpoint
from failforge.llm._structured import probe_structured
from failforge.llm._upstream import HttpUpstream
from failforge.roster import AgentProfile
from failforge.runlog import RunLog
from failforge.secrets import redact_known

#: Prompt sizes (approximate tokens, four characters each) the context check tries, smallest first.
CONTEXT_STEPS = (2_000, 7_000, 15_000)
#: The context failforge's prompts need: a seed's request near its end, the guide's and judges' prompts.
CONTEXT_NEEDED = 7_000
SLOW_CALL_SECONDS = 30.0

_WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


class Check(BaseModel):
    """One row of the doctor's table."""

    name: str
    ok: bool
    detail: str
    seconds: float
    disables: str = ""
    required: bool = False


def _ask(upstream: HttpUpstream, model: str, body: dict[str, Any]) -> dict[str, Any]:
    boundary = ModelBoundary(RunLog(trajectory_id="doctor", roster=[AgentProfile(name="doctor")]), upstream=upstream)
    message = boundary.complete({"model": model, "temperature": 0, "seed": 0, **body})["choices"][0]["message"]
    return dict(message)


def _timed(name: str, disables: str, run: Callable[[], tuple[bool, str]], *, required: bool = False) -> Check:
    started = time.perf_counter()
    try:
        ok, detail = run()
    except (FailforgeError, httpx.HTTPError, KeyError, IndexError, TypeError, ValueError) as exc:
        ok, detail = False, f"{type(exc).__name__}: {' '.join(redact_known(str(exc)).split())[:200]}"
    return Check(
        name=name,
        ok=ok,
        detail=detail,
        seconds=round(time.perf_counter() - started, 2),
        disables="" if ok else disables,
        required=required,
    )


def _calls(message: dict[str, Any]) -> list[tuple[str, Any]]:
    out = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        try:
            args = json.loads(function.get("arguments") or "{}")
        except ValueError:
            args = None
        out.append((str(function.get("name")), args))
    return out


def diagnose(endpoint: ModelEndpoint, *, context: bool = True) -> list[Check]:
    """Every check against ``endpoint``, in order; nothing is raised (a failure is a row)."""
    upstream = HttpUpstream(
        endpoint.base_url,
        api_key_env=endpoint.api_key_env,
        model=endpoint.model,
        timeout=endpoint.timeout,
        max_attempts=1,
    )
    model = endpoint.model
    try:
        return _checks(endpoint, upstream, model, context)
    finally:
        upstream.close()


def _checks(endpoint: ModelEndpoint, upstream: HttpUpstream, model: str, context: bool) -> list[Check]:
    checks: list[Check] = []
    hello = [{"role": "user", "content": "Reply with the single word: ready"}]

    def chat() -> tuple[bool, str]:
        message = _ask(upstream, model, {"messages": hello, "max_tokens": 16})
        text, calls = str(message.get("content") or ""), _calls(message)
        said = (
            f"answered {' '.join(text.split())[:40]!r}"
            if text.strip()
            else f"answered with tool call(s) {calls[:1]}"
            if calls
            else "answered nothing"
        )
        return bool(text.strip() or calls), said

    checks.append(_timed("chat", "everything: no agent, guide or judge can run", chat, required=True))
    if not checks[-1].ok:
        return checks
    checks.append(
        Check(
            name="latency",
            ok=checks[0].seconds <= SLOW_CALL_SECONDS,
            seconds=checks[0].seconds,
            detail=f"{checks[0].seconds:.1f} s for a 16-token answer",
            disables=(
                ""
                if checks[0].seconds <= SLOW_CALL_SECONDS
                else (
                    "campaigns at their default attempt deadline (900 s): raise --attempt-deadline or lower"
                    " --concurrency"
                )
            ),
        )
    )

    weather = [{"role": "user", "content": "What is the weather in Paris? Use the tool."}]

    def called(message: dict[str, Any]) -> bool:
        return any(name == "get_weather" and isinstance(args, dict) for name, args in _calls(message))

    def one_call() -> tuple[bool, str]:
        message = _ask(upstream, model, {"messages": weather, "tools": [_WEATHER], "max_tokens": 96})
        calls = _calls(message)
        return called(message), (
            f"{len(calls)} call(s): {calls[:2]}"
            if calls
            else f"no tool call; answered {str(message.get('content'))[:60]!r}"
        )

    def named_call() -> tuple[bool, str]:
        message = _ask(
            upstream,
            model,
            {
                "messages": weather,
                "tools": [_WEATHER],
                "max_tokens": 96,
                "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
            },
        )
        return called(message), (
            f"{_calls(message)[:1]}" if called(message) else f"no call; answered {str(message.get('content'))[:60]!r}"
        )

    checks.append(
        _timed(
            "tool call (its own choice)",
            "agents that choose their tools themselves: a live continuation makes no call of its own "
            "(only a decisive step failforge pins with pin_tool), so branches end early and keep little",
            one_call,
        )
    )
    checks.append(
        _timed(
            "tool call (named by tool_choice)",
            "every environment's agent (they act by tool calls): no seed, no campaign",
            named_call,
            required=not checks[-1].ok,
        )
    )

    def several() -> tuple[bool, str]:
        message = _ask(
            upstream,
            model,
            {
                "messages": [
                    {
                        "role": "user",
                        "content": (
                            "What is the weather in Paris and in Rome? Call the tool once per city, "
                            "both calls in this one reply."
                        ),
                    }
                ],
                "tools": [_WEATHER],
                "max_tokens": 160,
            },
        )
        calls = [c for c in _calls(message) if c[0] == "get_weather"]
        return len(calls) >= 2, f"{len(calls)} get_weather call(s) in one reply"

    checks.append(
        _timed(
            "several tool calls in a reply",
            "live steps that batch calls (BFCL parallel categories, agents that fan out): "
            "such steps continue one call at a time",
            several,
        )
    )

    def stream() -> tuple[bool, str]:
        body = {"model": model, "messages": hello, "max_tokens": 16, "temperature": 0, "stream": True}
        headers = {**upstream._headers, "X-Failforge-Agent": "doctor"}  # as the boundary names its calls upstream
        chunks, done = 0, False
        with httpx.stream(
            "POST",
            f"{endpoint.base_url.rstrip('/')}/chat/completions",
            json=body,
            headers=headers,
            timeout=endpoint.timeout,
        ) as response:
            if response.status_code >= 400:
                return False, f"HTTP {response.status_code}"
            for line in response.iter_lines():
                if line.startswith("data:"):
                    done = done or line.strip() == "data: [DONE]"
                    chunks += 0 if line.strip() == "data: [DONE]" else 1
        return chunks > 0 and done, f"{chunks} chunks{', [DONE]' if done else ', no [DONE]'}"

    checks.append(
        _timed(
            "streaming",
            "nothing in failforge (the boundary streams whole completions to frameworks itself); only clients that call"
            " this endpoint directly with stream=true",
            stream,
        )
    )

    def structured() -> tuple[bool, str]:
        support = probe_structured(upstream, model, refresh=True)
        return support.mechanism != "none", f"{support.mechanism} ({support.detail})"

    checks.append(
        _timed(
            "structured output",
            "schema-constrained judge, auditor, RCTA and guide answers: they are asked in free text and "
            "parsed (fewer usable answers from a weak model)",
            structured,
        )
    )

    def repeatable() -> tuple[bool, str]:
        body = {
            "messages": [{"role": "user", "content": "Name three colours and one animal, in one sentence."}],
            "max_tokens": 48,
        }
        first, second = _ask(upstream, model, body), _ask(upstream, model, body)
        same = (first.get("content"), _calls(first)) == (second.get("content"), _calls(second))
        return same, (
            "the same answer twice"
            if same
            else f"{str(first.get('content'))[:40]!r} then {str(second.get('content'))[:40]!r}"
        )

    checks.append(
        _timed(
            "repeatable at temperature 0",
            "re-recording a seed live and the decisiveness check's original-arm rerun give other runs "
            "(replay is unaffected: it serves the recording)",
            repeatable,
        )
    )
    if context:
        checks.append(_context(upstream, model))
    return checks


#: How servers state their context when a prompt exceeds it: llama-cpp-python ("exceed context window of 8192"),
#: OpenAI and vLLM ("maximum context length is 4096 tokens"), llama.cpp's C++ server ("n_ctx": 8192 in its body).
_STATED_CONTEXT = re.compile(r"(?:context window of|maximum context length is|\bn_ctx\D{0,4})\s*(\d[\d,]*)")


def stated_context(error: str) -> int | None:
    """The context length a server's overflow error states, if it states one."""
    found = _STATED_CONTEXT.search(error)
    return int(found.group(1).replace(",", "")) if found else None


def _context(upstream: HttpUpstream, model: str) -> Check:
    started = time.perf_counter()
    fits = 0
    detail = ""
    window: int | None = None
    for tokens in CONTEXT_STEPS:
        filler = " apple" * tokens  # one token per word in the common tokenizers
        try:
            _ask(
                upstream,
                model,
                {"messages": [{"role": "user", "content": f"{filler}\nReply with the word: ok"}], "max_tokens": 4},
            )
        except FailforgeError as exc:
            error = " ".join(redact_known(str(exc)).split())
            window = stated_context(error)
            detail = (
                f"~{tokens:,} refused: the server runs with a context of {window:,} tokens"
                if window
                else f"failed at ~{tokens:,} tokens: {error[:120]}"
            )
            break
        fits = tokens
    ok = fits >= CONTEXT_NEEDED
    shown = f"~{fits:,} tokens accepted" if fits else "not even ~2,000 tokens"
    return Check(
        name="context length",
        ok=ok,
        detail=f"{shown}{'; ' + detail if detail else ''}",
        seconds=round(time.perf_counter() - started, 2),
        disables=(
            ""
            if ok
            else (
                "long seeds (multi-agent teams, Who&When hand-crafted logs) past the limit: their later steps fail live"
            )
        ),
    )


def campaign_ready(checks: list[Check]) -> bool:
    """Whether a campaign can run at all: every required check passed."""
    tools = [c for c in checks if c.name.startswith("tool call")]
    return all(c.ok for c in checks if c.required) and any(c.ok for c in tools)
