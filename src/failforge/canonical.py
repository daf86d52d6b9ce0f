"""Canonical JSON and SHA-256 keys: the one function used at record time and at match time.

Both sides of every comparison (cache keys, model-request hashes, state fingerprints) go through
``canonical_json`` so that a difference in key order, Unicode normal form or whitespace can never
look like drift, and a declared volatile field can never make two equal things differ.
"""

from __future__ import annotations

import hashlib
import json
import math
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

MASK = "<masked>"

#: Keys that are secrets: never hashed, never stored (compared case-insensitively).
SECRET_KEYS = frozenset(
    {"authorization", "api_key", "api-key", "x-api-key", "openai-api-key", "proxy-authorization", "cookie"}
)


def _nfc(text: str) -> str:
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def _normalise(value: Any, mask: frozenset[str], path: str) -> Any:
    # Hot path (every cache key and request hash): the common JSON types first, dotted paths only
    # built when a mask is declared.
    if isinstance(value, str):
        return _nfc(value)
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            key_s = _nfc(key) if isinstance(key, str) else _nfc(str(key))
            if key_s.lower() in SECRET_KEYS:
                continue
            if mask:
                child = f"{path}.{key_s}" if path else key_s
                out[key_s] = MASK if (key_s in mask or child in mask) else _normalise(item, mask, child)
            else:
                out[key_s] = _normalise(item, mask, path)
        return out
    if isinstance(value, (list, tuple)):
        child_path = f"{path}[]" if mask else path
        return [_normalise(item, mask, child_path) for item in value]
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"canonical JSON has no representation for {value!r} (at {path or 'the root'})")
        # 1.0 and 1 are the same number to every JSON producer we talk to.
        return int(value) if value.is_integer() else value
    if hasattr(value, "model_dump"):
        return _normalise(value.model_dump(mode="json"), mask, path)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, (set, frozenset)):
        return sorted((_normalise(v, mask, path) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    return _nfc(str(value))


def canonical_json(value: Any, mask: Iterable[str] = ()) -> str:
    """Sorted keys, NFC strings, no insignificant whitespace; ``mask`` names volatile fields.

    A mask entry is either a bare key (masked wherever it occurs) or a dotted path from the root
    (``messages[].tool_call_id``). Secret keys are dropped entirely.
    """
    normalised = _normalise(value, frozenset(mask), "")
    # orjson: same bytes as json.dumps(sort_keys, no spaces, ensure_ascii=False) for normalised data,
    # except float spelling (shortest round-trip either way); several times faster on this hot path.
    return orjson.dumps(normalised, option=orjson.OPT_SORT_KEYS).decode("utf-8")


def sha256_hex(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def canonical_hash(value: Any, mask: Iterable[str] = ()) -> str:
    """SHA-256 of :func:`canonical_json`."""
    return sha256_hex(canonical_json(value, mask))


def pretty(value: Any, mask: Iterable[str] = ()) -> str:
    """Indented canonical form, for readable diffs in drift errors."""
    return json.dumps(json.loads(canonical_json(value, mask)), sort_keys=True, ensure_ascii=False, indent=1)


def readable_diff(
    expected: Any,
    actual: Any,
    *,
    label_expected: str = "recorded",
    label_actual: str = "replayed",
    context: int = 2,
    limit: int = 60,
) -> str:
    """A unified diff of the pretty canonical forms, cut to ``limit`` lines."""
    import difflib

    exp = expected if isinstance(expected, str) else pretty(expected)
    act = actual if isinstance(actual, str) else pretty(actual)
    lines = list(
        difflib.unified_diff(exp.splitlines(), act.splitlines(), label_expected, label_actual, n=context, lineterm="")
    )
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more diff lines)"]
    return "\n".join(lines)
