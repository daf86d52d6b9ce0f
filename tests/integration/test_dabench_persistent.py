"""DA-Bench's interpreter keeps one live process per run (the sandbox's session), on both backends: the same
observations and namespace fingerprints as a fresh process per block that re-runs the history, through errors, a
block that kills the interpreter and one that times out; one process for the run's blocks, none left after it; a
seed recorded on one mode replays identically on the other."""

from __future__ import annotations

import json
from typing import Any

import pytest

from _required import require
from failforge.environments import environment
from failforge.environments.sandbox import close_pooled_sandboxes
from failforge.replay import replay
from failforge.runlog import Plan, RunLog
from failforge.seeds import oracle_seed

pytestmark = pytest.mark.timeout(600)

BACKENDS = {"local": "dabench_local", "docker": "dabench_docker"}
BLOCKS = [
    "import pandas as pd\ndf = pd.read_csv('data/unemployement_industry.csv')\nprint(df.shape)",
    "total = df.select_dtypes('number').sum().sum()\nprint(total)\ntotal",
    "import os",
    "seen = {'b', 'a', 'c'}\nimport random, time\nprint(random.random(), time.time(), time.perf_counter())\nseen",
    "os = __import__('os')\nos.write(1, b'to stdout\\n')\nprint(input())",
    "os._exit(3)",
    "print(df.shape, total)\nlater = random.random()",
    "while True:\n    pass",
    "print(df.shape, total, later)\nfinal_answer(f'@total[{total}]')",
]


def _run(backend: str, persistent: bool, blocks: list[str]) -> list[tuple[Any, ...]]:
    plugin = environment("dabench")
    spec = plugin.spec("dabench-18", plugin.Options(backend=backend, persistent=persistent))
    with plugin.open(spec) as episode:
        assert episode.interpreter.persistent is persistent
        episode.interpreter.step_timeout = 4.0
        log = RunLog(trajectory_id="modes", plan=Plan.record())
        box = episode.toolbox(log)
        for k, code in enumerate(blocks):
            box.call("python_interpreter", json.dumps({"code": code}), f"c{k}")
        return [(s.content, s.error, s.state_fingerprint, s.state_parts) for s in log.steps if s.kind == "tool"]


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_one_live_process_gives_the_observations_of_a_fresh_process_per_block(backend: str) -> None:
    require(BACKENDS[backend])
    live = _run(backend, True, BLOCKS)
    fresh = _run(backend, False, BLOCKS)
    assert len(live) == len(BLOCKS)
    for k, (a, b) in enumerate(zip(live, fresh, strict=True)):
        assert a == b, f"block {k}: {a} != {b}"
    errors = [step[1] or "" for step in live]
    assert "Import of os is not allowed" in errors[2]
    assert "EOFError" in errors[4]  # the agent's code sees an empty stdin, never the interpreter's requests
    assert errors[5] == "Code execution failed: the interpreter stopped (exit code 3)"
    assert errors[7].startswith("Code execution failed: the interpreter stopped (timed out after 4s)")
    # after the kill and the timeout the state is the one before them, rebuilt from the history
    assert json.loads(live[-1][0])["is_final_answer"] is True and "ns:later" in (live[-1][3] or {})


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_the_run_keeps_one_process_and_leaves_none_behind(backend: str) -> None:
    require(BACKENDS[backend])
    pids = "import os\nprint(os.getpid(), sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"
    seen = []
    for _ in range(2):  # the second run gets the first one's sandbox back from the pool, reset
        plugin = environment("dabench")
        spec = plugin.spec("dabench-18", plugin.Options(backend=backend))
        with plugin.open(spec) as episode:
            box = episode.toolbox(RunLog(trajectory_id="pids", plan=Plan.record()))
            code = pids.replace("import os", "os = __import__('os')")
            first = box.call("python_interpreter", json.dumps({"code": code}), "c0")
            second = box.call("python_interpreter", json.dumps({"code": code}), "c1")
            seen.append((json.loads(first)["logs"], json.loads(second)["logs"]))
    close_pooled_sandboxes()  # the pooled sandbox of the second run is not left to the next test
    for first, second in seen:
        own, processes = first.split(" ", 1)
        assert first == second  # the same process ran both blocks
        assert json.loads(processes) == [1, int(own)]  # the sandbox's server and the run's interpreter, nothing else


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_a_seed_recorded_on_the_live_process_replays_identically_on_fresh_processes(backend: str) -> None:
    require(BACKENDS[backend])
    seed = oracle_seed("dabench", "dabench-18", {"backend": backend})
    assert seed.environment.config["persistent"] is True and seed.outcome and seed.outcome.success
    assert replay(seed).identical
    fresh = seed.environment.model_copy(update={"config": {**seed.environment.config, "persistent": False}})
    report = replay(seed.model_copy(update={"environment": fresh}))
    assert report.identical and report.outcome and report.outcome.success
