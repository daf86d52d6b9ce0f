"""The one JSONL reader. Every JSONL file failforge reads goes through :func:`read_jsonl`: seeds, gold,
rejected and failed records, labelled-failure records, predictions, judge-call recordings, and the
rows of the public datasets it imports (Who&When Pro, TracerTraj).

Why one reader: a file is the user's, and one bad line in it (a byte that is not UTF-8, a torn or
hand-edited line, an integer longer than Python converts, nesting deeper than the parser recurses, a
line that is a list) must cost that line only. Each such line comes out as a
:class:`~failforge.errors.SeedFormatError` naming the file, the line and what is wrong, in one line;
the caller reports it and goes on with the rest. Only a file that cannot be read at all (missing, a
directory, no permission) raises, as a :class:`~failforge.errors.ConfigError` naming it.

:func:`read_json` reads one whole JSON document (a Who&When log, a roster file) with the same
diagnostics, and :func:`parse_json` parses one JSON text already in memory.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from failforge.errors import ConfigError, SeedFormatError
from failforge.images import images_beside

_BOM = "\ufeff"


def _problem(exc: BaseException) -> tuple[int, str]:
    """(lines into the text, problem) for what ``json.loads`` raised: a syntax error, nesting too deep
    for its recursion, or an integer longer than Python converts to ``int`` (a plain ValueError)."""
    if isinstance(exc, json.JSONDecodeError):
        return exc.lineno - 1, f"not valid JSON: {exc.msg} at column {exc.colno}"
    if isinstance(exc, RecursionError):
        return 0, "JSON nested too deeply to read"
    if "integer string conversion" in str(exc):
        return 0, f"an integer of more than {sys.get_int_max_str_digits()} digits, longer than Python reads"
    return 0, f"not valid JSON: {' '.join(str(exc).split())[:200]}"


def parse_json(text: str, path: str = "<string>", line: int = 1) -> Any:
    """One JSON value from ``text`` (which starts at ``line`` of ``path``); any problem is a
    :class:`SeedFormatError` naming the file and the line it is on."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError, so is "too many digits"
        offset, problem = _problem(exc)
        raise SeedFormatError(path, line + offset, "<json>", problem) from None


def _not_utf8(path: str, line: int, raw: bytes, exc: UnicodeDecodeError) -> SeedFormatError:
    line_start = raw.rfind(b"\n", 0, exc.start) + 1
    return SeedFormatError(
        path,
        line + raw.count(b"\n", 0, exc.start),
        "<encoding>",
        f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start - line_start} of the line)",
    )


def _opened(path: str | Path) -> tuple[Path, Any]:
    """The file opened for reading, once it is known to be a regular file: a FIFO or a device in a
    dataset's place would block the reader (or never end), so it is refused before it is opened, and
    the open is non-blocking in case it was swapped in since."""
    file = Path(path)
    if not file.exists():
        raise ConfigError(f"{file}: no such file")
    if file.is_dir():
        raise ConfigError(f"{file} is a directory, not a file")
    if not file.is_file():
        raise ConfigError(f"{file} is not a regular file (a FIFO, a device or a socket); failforge reads files")
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ConfigError(f"{file}: cannot be read ({exc.strerror})") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ConfigError(f"{file} is not a regular file (a FIFO, a device or a socket); failforge reads files")
    os.set_blocking(fd, True)
    return file, os.fdopen(fd, "rb")


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]] | SeedFormatError]:
    """``(line number, object)`` for each non-blank line of a JSONL file, or the error for a bad line.

    A bad line is one that is not UTF-8, not JSON (including an integer too long to convert and nesting
    too deep to parse) or not a JSON object; it is yielded as a :class:`SeedFormatError` naming the file,
    the line and the problem, and reading goes on. A missing or unreadable file is a ``ConfigError``.
    A UTF-8 byte-order mark at the start of the file is ignored.
    """
    file, handle = _opened(path)
    name = str(file)
    _, refused = images_beside(file)  # a dataset file's images/ folder is read first (failforge.images)
    for line in refused:  # an image file not read (a FIFO, a link out of the folder...): one line, the rest goes on
        yield SeedFormatError(name, 0, "images", line)
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield _not_utf8(name, number, raw, exc)
                continue
            if number == 1 and text.startswith(_BOM):
                text = text[1:]
            if not text.strip():
                continue
            try:
                value = parse_json(text.rstrip("\r\n"), name, number)
            except SeedFormatError as exc:
                yield exc
                continue
            if not isinstance(value, dict):
                yield SeedFormatError(name, number, "<record>", f"expected a JSON object, found {_kind(value)}")
                continue
            yield number, value


def read_json(path: str | Path) -> Any:
    """A whole JSON document (not JSONL). Problems are a ``SeedFormatError`` naming the file and line;
    a missing or unreadable file is a ``ConfigError``."""
    file, handle = _opened(path)
    with handle:
        raw = handle.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(str(file), 1, raw, exc) from None
    return parse_json(text[1:] if text.startswith(_BOM) else text, str(file), 1)


def _kind(value: Any) -> str:
    return {
        list: "a list",
        str: "a string",
        int: "a number",
        float: "a number",
        bool: "a boolean",
        type(None): "null",
    }.get(type(value), type(value).__name__)


__all__ = ["parse_json", "read_json", "read_jsonl"]
