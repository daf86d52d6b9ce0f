"""Agent code that makes a result too big for the sandbox's reply, or writes into the interpreter's result channel,
gets an observation and keeps its state, on both modes (review of issue 35: a 300 kB last value or 60,000 printed
non-ASCII characters stopped the live interpreter, "exit code 137", and the assignment was lost; a fresh process
per block failed with a JSONDecodeError traceback)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from _required import require
from failforge.environments import environment
from failforge.environments.dabench._data import bundled_dir
from failforge.errors import ConfigError
from failforge.runlog import Plan, RunLog

pytestmark = pytest.mark.timeout(600)

BACKENDS = {"local": "dabench_local", "docker": "dabench_docker"}
BLOCKS = [
    "s = 'a' * 300000",
    "print('é' * 60000)",
    "globals().update({f'v{i}': i for i in range(20000)})",
    "print(len(s), v19999)",
]


def _run(backend: str, persistent: bool, blocks: list[str]) -> list[tuple[Any, ...]]:
    plugin = environment("dabench")
    spec = plugin.spec("dabench-18", plugin.Options(backend=backend, persistent=persistent))
    with plugin.open(spec) as episode:
        box = episode.toolbox(RunLog(trajectory_id="hostile", plan=Plan.record()))
        for k, code in enumerate(blocks):
            box.call("python_interpreter", json.dumps({"code": code}), f"c{k}")
        return [(s.content, s.error, s.state_parts) for s in box.log.steps if s.kind == "tool"]


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_an_oversized_result_is_cut_not_a_stopped_interpreter_and_both_modes_agree(backend: str) -> None:
    require(BACKENDS[backend])
    live = _run(backend, True, BLOCKS)
    assert [error for _, error, _ in live] == [None] * len(BLOCKS)
    assert json.loads(live[-1][0])["logs"] == "300000 19999\n"  # the state survived every block
    assert json.loads(live[0][0])["output"].startswith("a" * 10000)
    assert "(folded)" in " ".join(live[2][2] or {})
    if backend == "local":  # a fresh process per block reaches the same state, with no traceback
        fresh = _run(backend, False, BLOCKS)
        assert [error for _, error, _ in fresh] == [None] * len(BLOCKS)
        assert json.loads(fresh[-1][0])["logs"] == "300000 19999\n"


def test_a_line_written_into_the_result_channel_stops_the_interpreter_with_the_state_kept() -> None:
    require(BACKENDS["local"])
    forge = (
        "o = __import__('os')\nfor fd in range(3, 12):\n"
        "    try:\n        o.write(fd, b'garbage\\n')\n    except OSError:\n        pass"
    )
    steps = _run("local", True, ["a = 1", forge, "print(a)"])
    assert steps[1][1] == "Code execution failed: the interpreter stopped (its reply was not a result)"
    assert steps[2][1] is None and json.loads(steps[2][0])["logs"] == "1\n"


def test_a_table_over_the_sandboxs_file_limit_is_a_config_error(tmp_path: Path) -> None:
    """A user's table over the sandbox's 32 MiB file limit is named, not a ValueError traceback."""
    require(BACKENDS["local"])
    bundled = bundled_dir()
    row = next(x for x in (bundled / "da-dev-questions.jsonl").read_text().splitlines() if '"id": 18,' in x)
    (tmp_path / "tables").mkdir()
    (tmp_path / "da-dev-questions.jsonl").write_text(row + "\n")
    shutil.copy(bundled / "da-dev-labels.jsonl", tmp_path / "da-dev-labels.jsonl")
    table = (bundled / "tables" / json.loads(row)["file_name"]).read_bytes()
    (tmp_path / "tables" / json.loads(row)["file_name"]).write_bytes(table * (33 * 2**20 // len(table) + 1))
    plugin = environment("dabench")
    spec = plugin.spec("dabench-18", plugin.Options(backend="local", data_dir=str(tmp_path)))
    with pytest.raises(ConfigError, match="over the sandbox's file size limit"):
        plugin.open(spec)


def test_a_saved_run_with_a_300_kb_last_value_imports_and_replays_identically() -> None:
    """smolagents' memory keeps head and tail of a long last value; the interpreter now cuts it the same way instead
    of being stopped by the size of its reply, so such a run matches byte for byte and its seed replays."""
    require(BACKENDS["local"])
    from failforge.environments.dabench import instruction_for, question, resolve_dir
    from failforge.replay import replay
    from failforge.seeds.smolagents_run import _truncate, import_run, parse_run

    q = question(resolve_dir(None), "dabench-18")
    answer = " ".join(f"@{name}[{value}]" for name, value in q.common_answers)
    code = ["s = 'a' * 300000", f"final_answer({answer!r})"]
    shown = "Execution logs:\nLast output from code snippet:\n"
    steps: list[dict[str, Any]] = [{"task": instruction_for(q)}]
    for k, (block, observation) in enumerate(zip(code, [shown + _truncate("a" * 300000), shown + answer], strict=True)):
        steps.append(
            {
                "step_number": k + 1,
                "model_output": f"Thought: go\n<code>\n{block}\n</code>",
                "code_action": block,
                "observations": observation,
                "error": None,
                "action_output": answer if k else None,
                "is_final_answer": bool(k),
            }
        )
    verdict = import_run(parse_run({"steps": steps}, "big"), "big", backend="local")
    assert verdict.reasons == [] and verdict.seed is not None
    report = replay(verdict.seed)
    assert report.identical, report
