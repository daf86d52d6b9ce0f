"""The mutation check's mutants still apply to the code: each one's text is found exactly once in its
file, the edit changes the source and leaves valid Python, and every test file it names exists.

Without this a change to src/ would silently turn a mutant into "broken" (or, for a test file renamed,
into a mutant run against fewer tests) and the check would guard less than its table says.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("mutation_check", ROOT / "scripts" / "mutation_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutation_check"] = module
    spec.loader.exec_module(module)
    return module


MC = _load()


def test_mutant_names_are_unique():
    names = [m.name for m in MC.MUTANTS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("mutant", MC.MUTANTS, ids=lambda m: m.name)
def test_the_mutant_applies_once_and_compiles(mutant):
    source = (ROOT / MC.PKG / mutant.file).read_text()
    assert source.count(mutant.old) == 1, (
        f"{mutant.name}: its text occurs {source.count(mutant.old)} times in {mutant.file}"
    )
    mutated = source.replace(mutant.old, mutant.new)
    assert mutated != source
    compile(mutated, mutant.file, "exec")
    for test in mutant.tests:
        assert (ROOT / test.split("::")[0]).exists(), f"{mutant.name}: {test} does not exist"
