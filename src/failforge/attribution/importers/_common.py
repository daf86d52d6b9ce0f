"""What every importer needs: text from loosely typed fields, image digests, problems with a location."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from typing import Any

from failforge.attribution._record import ImageRef, RecordProblem

_SUFFIX = re.compile(r"\s*\((?:->|thought|termination)[^)]*\)\s*$")


class Skip(Exception):
    """Raised inside an importer for a record that cannot be read; becomes a :class:`RecordProblem`."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem

    def at(self, path: str, line: int | None = None) -> RecordProblem:
        return RecordProblem(path=path, line=line, field=self.field, problem=self.problem)


def text_of(value: Any) -> str:
    """Content as text: strings verbatim, None as empty, anything structured as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def bare_agent(role: str) -> str:
    """'Orchestrator (-> WebSurfer)' and 'Orchestrator (thought)' -> 'Orchestrator' (Magentic-One role labels)."""
    return _SUFFIX.sub("", role).strip()


def recipient_of(role: str) -> str | None:
    match = re.search(r"\(->\s*([^)]+)\)", role)
    return match.group(1).strip() if match else None


def image_ref(entry: Any) -> ImageRef | None:
    """An image entry of a release row ({data: base64} or {path}) as a digest and/or a path."""
    if isinstance(entry, str):
        return ImageRef(path=entry)
    if not isinstance(entry, dict):
        return None
    data = entry.get("data")
    if isinstance(data, str) and data:
        try:
            digest = hashlib.sha256(base64.b64decode(data, validate=False)).hexdigest()
        except (binascii.Error, ValueError):
            digest = hashlib.sha256(data.encode()).hexdigest()
        return ImageRef(sha256=digest, path=entry.get("path") or entry.get("source"))
    if entry.get("path"):
        time_s = entry.get("time_s")
        return ImageRef(path=str(entry["path"]), time_s=float(time_s) if isinstance(time_s, (int, float)) else None)
    return None


def images_of(entries: Any) -> list[ImageRef]:
    out: list[ImageRef] = []
    for entry in entries or []:
        ref = image_ref(entry)
        if ref is not None:
            out.append(ref)
    return out


def require_str(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise Skip(key, "missing" if value is None else f"expected a string, found {type(value).__name__}")
    return value


def int_step(value: Any, field: str) -> int:
    """A step number that sources write as a string ('12') or an int; anything else is a problem."""
    if isinstance(value, bool):
        raise Skip(field, f"expected a step number, found {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise Skip(field, f"expected a step number, found {value!r}")
