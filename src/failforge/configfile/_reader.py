"""The one reader of a user's configuration file (a TOML campaign file, a YAML methods config): every way the file
can be wrong is one :class:`~failforge.errors.ConfigError` line naming the file, before anything reads its content.

A path that is not a regular file (a FIFO, a device, a directory) is refused before it is opened, so a config
cannot hang the command; YAML is read with its aliases bounded (:mod:`._yaml`), and both parsers' recursion on a
deeply nested document is a refusal, not a traceback. Validation against the command's model stays with the
command (it knows which fields are paths, and how to say what is wrong with one).
"""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path
from typing import Any, Literal

import yaml

from failforge.configfile._yaml import YamlTooLarge, safe_load
from failforge.errors import ConfigError

Format = Literal["toml", "yaml"]


def check_regular_file(path: str | Path, *, what: str, give: str) -> None:
    """A one-line :class:`ConfigError` unless ``path`` is a regular file: missing, unreadable, a directory, a FIFO or
    a device (which would hang the reader) are each said, ``what`` naming the file ("cell 'x': seeds file s.jsonl")
    and ``give`` what to pass instead ("a TOML file")."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError as exc:
        raise ConfigError(f"{what} does not exist") from exc
    except OSError as exc:
        raise ConfigError(f"{what} cannot be read ({exc.strerror})") from exc
    if stat.S_ISDIR(mode):
        raise ConfigError(f"{what} is a directory; give {give}")
    if not stat.S_ISREG(mode):
        raise ConfigError(f"{what} is not a regular file (a pipe or a device); give {give}")


def read_config_data(path: str | Path, *, what: str, format: Format) -> Any:
    """The parsed content of the config file at ``path`` (``what`` names it in messages: "campaign file")."""
    file, kind = Path(path), format.upper()
    check_regular_file(file, what=f"{what} {file}", give=f"a {kind} file")
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} {file} is not UTF-8 text (byte {exc.start}); give a {kind} file") from exc
    except OSError as exc:
        raise ConfigError(f"{what} {file} cannot be read ({exc.strerror})") from exc
    if format == "toml":
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{what} {file} is not valid TOML: {exc}") from exc
        except RecursionError as exc:  # tomllib parses nested arrays and tables recursively
            raise ConfigError(f"{what} {file} is nested too deeply to be a {what}; give a TOML file") from exc
    try:
        return safe_load(text)  # aliases bounded: a 400-byte alias bomb is refused, not expanded
    except YamlTooLarge as exc:
        raise ConfigError(f"{what} {file}: {exc}") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        raise ConfigError(f"{what} {file} is not valid YAML{line}: {getattr(exc, 'problem', None) or exc}") from exc


__all__ = ["Format", "read_config_data"]
