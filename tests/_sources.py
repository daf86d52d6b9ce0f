"""failforge's own source files, parsed once per test session for the tests that read the code itself
(the layer order, the one JSONL reader): parsing every module of src/failforge takes a second or more."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "failforge"


@functools.cache
def source_files() -> tuple[Path, ...]:
    """Every module of the package, sorted."""
    return tuple(sorted(SRC.rglob("*.py")))


@functools.cache
def source_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@functools.cache
def source_tree(path: Path) -> ast.Module:
    """The module's syntax tree (shared: a test must not change it)."""
    return ast.parse(source_text(path))
