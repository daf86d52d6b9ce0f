"""Every benchmark in scripts/ runs with no arguments: its parser accepts none and keeps its options.

Cheap on purpose (no bench is run, nothing is timed): each ``scripts/bench_*.py`` is imported and its
module-level ``arguments()`` parser is asked to parse an empty command line. A bench whose parser
grew a required option, or whose main still builds its own parser, fails here; the timed runs are
the benches themselves (their outputs are in docs/PERFORMANCE.md).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHES = sorted((ROOT / "scripts").glob("bench_*.py"))


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_bench_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_there_are_benches():
    assert len(BENCHES) >= 11, [p.name for p in BENCHES]


@pytest.mark.parametrize("path", BENCHES, ids=lambda p: p.stem)
def test_the_bench_parses_an_empty_command_line(path: Path):
    module = _load(path)
    parser = module.arguments()
    assert isinstance(parser, argparse.ArgumentParser)
    opts = parser.parse_args([])
    assert isinstance(opts, argparse.Namespace) and vars(opts), f"{path.name}: no options at all"
    required = [a.dest for a in parser._actions if a.required]
    assert not required, f"{path.name}: required options {required}"
    assert "arguments().parse_args(" in path.read_text(), f"{path.name}: main does not parse with arguments()"


def test_bench_replay_defaults_to_the_embedded_model_with_a_stated_loopback_fallback():
    opts = _load(ROOT / "scripts" / "bench_replay.py").arguments().parse_args([])
    assert opts.live == "auto" and opts.latency == 1.0
    override = _load(ROOT / "scripts" / "bench_replay.py").arguments().parse_args(["--live", "loopback", "--latency", "0.25", "--repeats", "2"])
    assert (override.live, override.latency, override.repeats) == ("loopback", 0.25, 2)
