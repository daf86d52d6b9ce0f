"""DA-Bench seeds recorded live over ``--base-url``: ``failforge serve-scripted analyst`` stands in for a capable
model behind an OpenAI-compatible endpoint, and ``failforge record dabench`` drives smolagents' real CodeAgent against
it (its prompts, its parser, the interpreter, the closed-form evaluator). The seed is kept because the evaluator
passed it, and replays identically."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from _required import require

pytestmark = pytest.mark.timeout(600)


def test_a_seed_recorded_through_base_url_succeeds_and_replays_identically(tmp_path: Path) -> None:
    require("dabench_local")
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    server = subprocess.Popen(
        [sys.executable, "-m", "failforge", "serve-scripted", "analyst", "--task", "dabench-18", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None
        found = re.search(r"http://127\.0\.0\.1:\d+/v1", server.stdout.readline())
        assert found, server.stderr.read() if server.stderr else ""
        seeds = tmp_path / "seeds.jsonl"
        recorded = subprocess.run(
            [
                *(sys.executable, "-m", "failforge", "record", "dabench", "--task", "dabench-18"),
                *("--backend", "local", "--base-url", found.group(0), "--model", "scripted-analyst"),
                *("--api-key-env", "NO_KEY_NEEDED", "-o", str(seeds)),
            ],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        server.kill()
        server.wait()
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    [seed] = [json.loads(line) for line in seeds.read_text().splitlines()]
    assert seed["outcome"]["success"] and seed["harness"]["name"] == "smolagents.code"
    calls = [s["model_call"] for s in seed["steps"] if s.get("model_call")]
    assert len(calls) == 4 and all(c["request"]["model"] == "scripted-analyst" for c in calls)
    assert "final_answer(" in calls[-1]["response"]["choices"][0]["message"]["content"]
    audit = subprocess.run(
        [sys.executable, "-m", "failforge", "audit", str(seeds), "--json", str(tmp_path / "audit.json")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert '"identical": 1' in (tmp_path / "audit.json").read_text()
