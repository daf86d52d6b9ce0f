"""A real framework tested with ``failforge serve-scripted`` alone: pydantic-ai, in its own venv, from its own docs.

``examples/scripted/pydantic_ai_bfcl.py`` imports nothing from failforge: an OpenAI-compatible model at the
scripted server's base URL, three function tools, a two-turn conversation carried by ``message_history``. The
server plays BFCL's ground truth for multi_turn_base_3, one call per reply, so the agent must make exactly the
task's calls in order, turn after turn, and end each turn with the server's ``Done.``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from _required import require

require("bfcl")
require("venv_pydantic_ai")

from external_teams import venv_python  # noqa: E402

from failforge.environments.bfcl import Simulators, entry_of, parse_call, turn_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TASK = "multi_turn_base_3"


def test_pydantic_ai_makes_the_tasks_calls_against_the_scripted_server() -> None:
    entry, truth = entry_of(TASK)
    turns = [turn_text(entry, i) for i in range(len(entry["question"]))]
    expected = []
    for turn in truth:
        for text in turn:
            name, args = parse_call(text, Simulators(entry))
            expected.append(f"{name} {json.dumps(args, sort_keys=True)}")
    server = subprocess.Popen(
        [sys.executable, "-m", "failforge", "serve-scripted", "bfcl", "--task", TASK, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        match = re.search(r"http://127\.0\.0\.1:\d+/v1", server.stdout.readline())
        if match is None:
            pytest.fail(f"serve-scripted printed no base URL: {server.stderr.read() if server.stderr else ''}")
        done = subprocess.run(
            [
                venv_python("pydantic-ai"),
                str(ROOT / "examples" / "scripted" / "pydantic_ai_bfcl.py"),
                match.group(0),
                *turns,
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert [line.removeprefix("call: ") for line in lines if line.startswith("call: ")] == expected
    assert [line for line in lines if line.startswith("answer: ")] == ["answer: Done."] * len(turns)
