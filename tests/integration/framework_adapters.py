"""What the framework adapter tests share: a loopback team model, model-recorded seeds, a small campaign.

The model is a loopback OpenAI-compatible server (failforge.testing) answering with the adapter's own
scripted team policy as a public scripted model (failforge.testing.scripted) (a pure function of each
request): every agent of the framework is played by it, the guide gets a premature-termination note, and
under a note the acting agent stops early as
its framework spells a final answer. Framework, environment (the real AgentDojo), boundaries,
replay, evaluator and filters are real.

The mode is R.3 (a numerical slip), whose conformance is decided by rule whatever the framework's
spelling: under the note the acting agent makes its usual call with its first number one too large, a
worker in its tool's arguments, the lead in the values it hands a worker.
"""
# ruff: noqa: F401  (imported after the parts they need are checked, or for their side effects)

from __future__ import annotations

import re
from typing import Any

from failforge.campaign import CampaignConfig, ResolvedModels, run_campaign
from failforge.environments import environment
from failforge.llm import HttpUpstream, ModelEndpoint
from failforge.replay import replay
from failforge.seeds import env_spec, harness_for, record
from failforge.testing import LoopbackModelServer
from failforge.testing.scripted import (
    NOTES,
    ScriptedModel,
    concrete,
    rule_judge,
    slip,
    slipped,
)  # noqa: F401 - the tests' shared names
from failforge.trajectory import ComponentSpec, Trajectory, load_jsonl, write_jsonl

TASK = "banking/user_task_3"
MODE = "R.3"


class LoopbackTeam(ScriptedModel):
    """The adapter's scripted policy as a scripted model: the guide writes the mode's note, the judge rules,
    and under a note the acting agent slips (A.5: stops early as its framework spells a final answer).

    Served as the server's ``agent_policy``: the calling agent comes from the request's route or the
    ``X-Failforge-Agent`` header failforge's boundary sends upstream; the guide's calls name no agent.
    """

    default_mode = MODE

    def __init__(self, harness: Any, task: str = TASK) -> None:
        spec = env_spec("agentdojo", task)
        calls, final = environment("agentdojo").ground_truth(spec)
        self.policy = harness.scripted_policy(calls, final)

    def act(self, agent: str | None, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        if agent is None:
            raise AssertionError("a team member's call reached the loopback team without naming its agent")
        return self.policy.respond(agent, body)  # type: ignore[no-any-return]

    def stop_early(self, agent: str | None, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        return self.policy.stop_early(agent, body)  # type: ignore[no-any-return]


judge = rule_judge


def model_seed(harness_name: str, server: LoopbackModelServer, task: str = TASK, **overrides: Any) -> Trajectory:
    """A seed recorded live from the loopback team model, through the framework, as a model seed."""
    spec = env_spec("agentdojo", task)
    harness = harness_for(harness_name, spec, **overrides)
    upstream = HttpUpstream(server.base_url, api_key_env=None, max_attempts=1)
    try:
        return record(
            env_spec=spec,
            harness=harness,
            model=ComponentSpec(name="loopback", config={"role": "agent"}),
            upstream=upstream,
        )
    finally:
        upstream.close()


def replayed_identically(seed: Trajectory) -> tuple[bool, str]:
    report = replay(seed, raise_on_drift=False)
    return report.identical, str(report.drift or report.infrastructure or "")


def campaign(
    tmp_path: Any,
    seeds: list[Trajectory],
    server: LoopbackModelServer,
    *,
    steps: int = 12,
    modes: tuple[str, ...] = (MODE,),
) -> tuple[Any, list[Trajectory]]:
    seeds_path = tmp_path / "seeds.jsonl"
    write_jsonl(seeds_path, seeds)
    endpoint = ModelEndpoint(base_url=server.base_url, model="loopback", api_key_env=None, timeout=30.0, max_attempts=1)
    semantic = any(not code.startswith(("A.", "R.3")) for code in modes)
    config = CampaignConfig(
        seeds=[str(seeds_path)],
        output=str(tmp_path / "out"),
        concurrency=1,
        plan={"modes": list(modes), "steps_per_seed": steps, "modes_per_step": len(modes)},
        filters={"conformance": {"judge": semantic}},
    )
    summary = run_campaign(config, ResolvedModels(agent=endpoint, guide=endpoint))
    path = tmp_path / "out" / "gold.jsonl"
    if not path.exists():  # nothing kept
        return summary, []
    gold, bad = load_jsonl(path)
    assert not bad
    return summary, gold


def requests_of(seed: Trajectory) -> list[dict[str, Any]]:
    return [s.model_call.request for s in seed.agent_steps()]  # type: ignore[union-attr]


_WORKER = re.compile(r"_worker$")


def is_worker(agent: str) -> bool:
    return bool(_WORKER.search(agent))
