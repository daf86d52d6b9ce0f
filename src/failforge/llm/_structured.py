"""Structured answers: ask an endpoint for an answer in a JSON schema with the endpoint's own mechanism.

Every model call whose answer failforge parses declares its answer as a pydantic model. Endpoints differ in
how they constrain an answer to a schema, so each endpoint is probed once (per base URL and model, through
the model boundary like every call) and the mechanism it honours is kept and recorded in provenance:

- ``json_schema``: the OpenAI form, ``response_format={"type": "json_schema", "json_schema": {...}}``
  (OpenAI, vLLM, SGLang, llama.cpp's own C++ server);
- ``json_object``: llama-cpp-python's server, which takes ``{"type": "json_object", "schema": {...}}``
  and turns the schema into a grammar (its ``ChatCompletionRequestResponseFormat`` has no ``json_schema``
  type, and a request with one is refused with HTTP 422);
- ``none``: neither is honoured; the answer is asked for in free text and parsed as before.

A schema constrains the form of an answer (field names, a step number among the steps shown, a code among
the 18), never the question. A structured reply is rendered back into the ``Key: value`` lines the free-text
parsers read (:func:`render_fields`), so one parser serves both, and a reply that does not validate falls
back to free-text parsing of what was written.

A grammar fixes an answer's form but not every bound a schema states: llama.cpp's grammar enforces no
``minimum``/``maximum`` (the embedded model writes a confidence of 2.7), and ``max_tokens`` cuts a long
answer mid-JSON. :func:`reply_fields` therefore reads a JSON reply that does not validate *field by field*,
as written (complete values only, :func:`json_object_of`), so the method's own field checks name the one
wrong value instead of the whole answer being lost; and :func:`answer_tokens` is the token budget a schema's
bounds admit, so a judge asks for at least that many (``JudgeSession.ask``).

Free-text replies are read as Who&When Pro's released harness reads them: a judge that writes an answer,
then "Wait, let me reconsider", then another complete answer, is read by its *last* complete answer block
(:func:`last_complete_block`).
"""

from __future__ import annotations

import copy
import json
import re
import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any, Literal, get_args, get_origin

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from failforge.errors import FailforgeError
from failforge.llm._boundary import ModelBoundary
from failforge.llm._upstream import Responder
from failforge.roster import AgentProfile
from failforge.runlog import RunLog

Mechanism = Literal["json_schema", "json_object", "none"]
MECHANISMS: tuple[Mechanism, ...] = ("json_schema", "json_object", "none")


class StructuredSupport(BaseModel):
    """What an endpoint honours for structured answers (recorded in every output's provenance)."""

    mechanism: Mechanism
    endpoint: str = Field(description="the endpoint's name (credentials stripped) and model")
    detail: str = ""
    seconds: float = 0.0


class _ProbeAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer: Literal["yes", "no"]


_PROBE_MESSAGES = [{"role": "user", "content": "Say hello to the user in one friendly sentence."}]


def is_probe(body: dict[str, Any]) -> bool:
    """Whether a request is the structured-output probe (a loopback server may answer or count it apart)."""
    return body.get("messages") == _PROBE_MESSAGES and "response_format" in body


def response_format(schema: type[BaseModel], mechanism: Mechanism, name: str | None = None) -> dict[str, Any] | None:
    """The ``response_format`` request field asking for ``schema`` with ``mechanism`` (None for ``none``).

    The OpenAI form is sent strict and without length bounds (strict mode refuses ``maxLength``; a capable
    model needs none); llama-cpp-python's grammar keeps them, which is what stops a weak model filling a
    string field until ``max_tokens`` cuts the JSON."""
    if mechanism == "none":
        return None
    spec = schema.model_json_schema()
    if mechanism == "json_object":
        return {"type": "json_object", "schema": spec}
    return {
        "type": "json_schema",
        "json_schema": {"name": name or schema.__name__, "strict": True, "schema": _strict(spec)},
    }


def _strict(spec: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(spec)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key in ("maxLength", "minLength", "title"):
                node.pop(key, None)
            if node.get("type") == "object" and "properties" in node:
                node["additionalProperties"] = False
                node["required"] = list(node["properties"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(out)
    return out


def read_structured(text: str | None, schema: type[BaseModel]) -> BaseModel | None:
    """``text`` as an instance of ``schema``: the JSON object it is (or the last one it holds, e.g. inside a
    code fence), validated; None when there is none or it does not validate."""
    if not text:
        return None
    candidates = [text.strip()]
    candidates += [m.group(1) for m in reversed(list(re.finditer(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.DOTALL)))]
    for candidate in candidates:
        try:
            return schema.model_validate(
                json.loads(candidate, strict=False)
            )  # a grammar may let raw newlines into a string
        except (ValueError, ValidationError):
            continue
    return None


def json_object_of(text: str | None) -> dict[str, Any] | None:
    """The JSON object a reply is (or the last one a code fence holds), or what is complete of one that was cut
    off (by ``max_tokens``): the values written in full, a value cut in the middle dropped. None without one."""
    if not text:
        return None
    candidates = [text.strip()]
    candidates += [m.group(1) for m in reversed(list(re.finditer(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.DOTALL)))]
    for candidate in candidates:
        if not candidate.startswith("{"):
            continue
        try:
            value = json.loads(candidate, strict=False)
        except ValueError:
            try:
                value = pydantic_core.from_json(candidate, allow_partial=True)
            except ValueError:
                continue
        if isinstance(value, dict):
            return value
    return None


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model a field holds (itself, or the items of a list of it)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) is list:
        args = get_args(annotation)
        return _model_in(args[0]) if args else None
    return None


def unchecked(schema: type[BaseModel], data: dict[str, Any]) -> BaseModel:
    """``data`` (keys by alias or name) as an instance of ``schema`` *without* validation, nested models too: each
    value as written, a missing field unset. For rendering a reply whose every field the method checks itself."""
    values: dict[str, Any] = {}
    for name, info in schema.model_fields.items():
        key = info.alias if info.alias in data else name
        if key not in data:
            continue
        value = data[key]
        inner = _model_in(info.annotation)
        if inner is not None and isinstance(value, list):
            value = [unchecked(inner, v) if isinstance(v, dict) else v for v in value]
        elif inner is not None and isinstance(value, dict):
            value = unchecked(inner, value)
        values[name] = value
    return schema.model_construct(**values)


def _rendered(answer: BaseModel) -> str:
    render = getattr(answer, "render", None)
    return render() if callable(render) else render_fields(answer)


def reply_fields(text: str, schema: type[BaseModel]) -> tuple[str, bool]:
    """(the reply as the ``Key: value`` lines its free-text parser reads, whether it validated under ``schema``).

    A reply that validates is rendered; a JSON reply that does not (a value out of a bound the grammar could not
    enforce, a reply cut off mid-JSON) is rendered field by field as written, so one bad value costs that field,
    not the answer; any other reply is handed over as written."""
    answer = read_structured(text, schema)
    if answer is not None:
        return _rendered(answer), True
    data = json_object_of(text)
    return (text, False) if data is None else (_rendered(unchecked(schema, data)), False)


#: Characters per token a budget assumes: a grammar-constrained JSON answer of the embedded model measured 2.2-2.6
#: (keys, quoted ids, timestamps and numbers tokenise short), so 2 leaves room.
CHARS_PER_TOKEN = 2


def answer_tokens(schema: type[BaseModel]) -> int | None:
    """The tokens a JSON answer to ``schema`` needs at most when it uses every bound the schema states (each
    string's ``maxLength``, each list's ``maxItems``, the longest enum value), at :data:`CHARS_PER_TOKEN`; None
    when the schema bounds some string or list by nothing (then no budget follows from it)."""
    spec = schema.model_json_schema()
    defs = spec.get("$defs", {})

    def chars(node: dict[str, Any]) -> int | None:
        if "$ref" in node:
            return chars(defs[node["$ref"].rsplit("/", 1)[-1]])
        for key in ("anyOf", "oneOf"):
            if key in node:
                options = [chars(option) for option in node[key]]
                return None if any(o is None for o in options) else max(o for o in options if o is not None)
        if "enum" in node:
            return max(len(json.dumps(value)) for value in node["enum"])
        if "const" in node:
            return len(json.dumps(node["const"]))
        kind = node.get("type")
        if kind == "object":
            parts = [(len(json.dumps(key)) + 4, chars(value)) for key, value in (node.get("properties") or {}).items()]
            return None if any(c is None for _, c in parts) else 2 + sum(k + (c or 0) for k, c in parts)
        if kind == "array":
            item = chars(node.get("items") or {})
            most = node.get("maxItems")
            return None if item is None or most is None else 2 + most * (item + 2)
        if kind == "string":
            most = node.get("maxLength")
            return None if most is None else most + 2
        return {"integer": 6, "number": 8, "boolean": 5, "null": 4}.get(str(kind), 8)

    total = chars(spec)
    return None if total is None else -(-total // CHARS_PER_TOKEN) + 16


def render_fields(answer: BaseModel) -> str:
    """A structured answer as the ``Key: value`` lines the free-text parsers read, keys by field alias
    (``Agent Name``), values on one line each (a field an unchecked answer lacks is left out)."""
    lines: list[str] = []
    for name, info in type(answer).model_fields.items():
        value = getattr(answer, name, None)
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            lines.extend(f"{info.alias or name}: {' '.join(str(v).split())}" for v in value)
        else:
            lines.append(f"{info.alias or name}: {' '.join(str(value).split())}")
    return "\n".join(lines)


def last_complete_block(pairs: Iterable[tuple[str, str]], required: Sequence[str]) -> dict[str, str]:
    """The fields of the last complete answer block among ``(key, value)`` pairs in reply order.

    A block ends where a key it already holds comes again (the judge starts a new answer); a block is
    complete when it has every ``required`` key. Without any complete block (or without ``required``), each
    key's first value (what was read before) is kept, so a reply with one partial answer reads as it always did."""
    blocks: list[dict[str, str]] = [{}]
    first: dict[str, str] = {}
    for key, value in pairs:
        first.setdefault(key, value)
        if key in blocks[-1]:
            blocks.append({})
        blocks[-1][key] = value
    for block in reversed(blocks if required else []):
        if all(k in block for k in required):
            return block
    return first


# --- the probe ---------------------------------------------------------------------------------------------

_cache: dict[tuple[str, str], StructuredSupport] = {}
_cache_lock = threading.Lock()


def endpoint_key(upstream: Responder, model: str) -> tuple[str, str]:
    """(endpoint, model) an upstream answers for: its base URL when it has one, else its name."""
    base = str(getattr(upstream, "base_url", "") or getattr(upstream, "name", "") or type(upstream).__name__)
    return base, str(getattr(upstream, "model", None) or model)


def probe_structured(upstream: Responder, model: str, *, refresh: bool = False) -> StructuredSupport:
    """Which mechanism ``upstream`` honours, asked once per (endpoint, model) in this process.

    Each mechanism is tried with a question whose natural answer is a sentence ("say hello") and a schema
    that only admits ``{"answer": "yes"|"no"}``: an endpoint that ignores the field answers the sentence,
    one that refuses it answers with an HTTP error; only one that constrains the answer returns the JSON.
    An in-process responder (a scripted policy, no ``base_url``) is no endpoint: it is not probed and
    is asked in free text."""
    key = endpoint_key(upstream, model)
    if not getattr(upstream, "base_url", None):
        return StructuredSupport(
            mechanism="none",
            endpoint=f"{key[0]} {key[1]}",
            detail="an in-process responder, not an endpoint: not probed",
        )
    with _cache_lock:
        if not refresh and key in _cache:
            return _cache[key]
    started = time.perf_counter()
    tried: list[str] = []
    found: Mechanism = "none"
    once = _single_attempt(upstream)
    for mechanism in ("json_schema", "json_object"):
        ok, detail = _try(once, model, mechanism)
        tried.append(f"{mechanism}: {detail}")
        if ok:
            found = mechanism
            break
    name = getattr(upstream, "name", key[0])
    support = StructuredSupport(
        mechanism=found,
        endpoint=f"{name} {key[1]}",
        detail="; ".join(tried),
        seconds=round(time.perf_counter() - started, 3),
    )
    with _cache_lock:
        _cache[key] = support
    return support


def _single_attempt(upstream: Any) -> Any:
    """A view of ``upstream`` that does not retry: an endpoint that refuses a mechanism with HTTP 500
    (llama-cpp-python does, for ``json_schema``) is asked once, not through the retries' back-off."""
    if hasattr(upstream, "max_attempts"):
        view = copy.copy(upstream)
        view.max_attempts = 1
        return view
    inner = getattr(upstream, "inner", None)
    if inner is not None and hasattr(inner, "max_attempts"):
        view = copy.copy(upstream)
        view.inner = _single_attempt(inner)
        return view
    return upstream


def _try(upstream: Responder, model: str, mechanism: Mechanism) -> tuple[bool, str]:
    body = {
        "model": model,
        "messages": _PROBE_MESSAGES,
        "temperature": 0,
        "max_tokens": 24,
        "response_format": response_format(_ProbeAnswer, mechanism, "probe"),
    }
    boundary = ModelBoundary(
        RunLog(trajectory_id=f"structured-probe-{mechanism}", roster=[AgentProfile(name="probe")]), upstream=upstream
    )
    try:
        response = boundary.complete(body)
    except Exception as exc:  # noqa: BLE001 - a probe that fails for any reason means: not this mechanism
        kind = "refused" if isinstance(exc, FailforgeError) else f"failed ({type(exc).__name__})"
        return False, f"{kind}: {' '.join(str(exc).split())[:160]}"
    try:
        text = response["choices"][0]["message"].get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError):
        return False, "no message in the reply"
    if read_structured(text, _ProbeAnswer) is None:
        return False, f"ignored (answered {' '.join(text.split())[:60]!r})"
    return True, "honoured"


def mechanism_of_requests(requests: Iterable[dict[str, Any]]) -> Mechanism | None:
    """The mechanism recorded requests used (a replay must ask exactly as the recording did), or None
    when no recorded request asked for a structured answer."""
    for request in requests:
        kind = (request.get("response_format") or {}).get("type") if isinstance(request, dict) else None
        if kind in ("json_schema", "json_object"):
            return kind  # type: ignore[no-any-return]
    return None


def with_structured(request: dict[str, Any], schema: type[BaseModel], responder: Responder) -> dict[str, Any]:
    """``request`` asking for ``schema`` with the mechanism ``responder``'s endpoint honours (probed once);
    unchanged when it honours none."""
    fmt = response_format(schema, probe_structured(responder, str(request.get("model", ""))).mechanism)
    return request if fmt is None else {**request, "response_format": fmt}


def as_fields(text: str, schema: type[BaseModel]) -> str:
    """A reply that is ``schema``'s JSON (valid, or read field by field as written) as its ``Key: value`` lines;
    any other reply as written."""
    return reply_fields(text, schema)[0]


def asked_as_recorded(request: dict[str, Any], recorded: dict[str, Any]) -> dict[str, Any]:
    """A rebuilt request asked the way its recording was (with its ``response_format``, the endpoint's
    mechanism at the time), so a replay checks the question, not the endpoint it was first asked of."""
    if "response_format" in recorded and "response_format" not in request:
        return {**request, "response_format": recorded["response_format"]}
    return request
