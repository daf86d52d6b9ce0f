"""Replay fidelity on the real AgentDojo package: all oracle seeds, and tampering caught at its step."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from failforge.errors import EnvStateDrift, PromptDrift, RecordingExhausted
from failforge.replay import replay
from failforge.trajectory import Trajectory

# AgentDojo 0.1.35's own GroundTruthPipeline fails this v1 task's utility check too: rescheduling moves
# end_time as well, and the v1 utility allows only start_time to change.
KNOWN_BAD_GROUND_TRUTH = {"agentdojo-workspace-user_task_7-oracle"}


def test_all_97_oracle_seeds_replay_identically_and_succeed(all_oracle_seeds):
    assert len(all_oracle_seeds) == 97
    successful = [s for s in all_oracle_seeds if s.outcome and s.outcome.success]
    assert {s.id for s in all_oracle_seeds} - {s.id for s in successful} == KNOWN_BAD_GROUND_TRUTH
    identical = 0
    for seed in successful:
        report = replay(seed, raise_on_drift=False)
        assert report.drift is None, f"{seed.id}: {report.drift}"
        assert report.outcome is not None and report.outcome.success, seed.id
        identical += report.identical
    assert identical == 96


def test_oracle_seeds_carry_recorded_model_requests(all_oracle_seeds):
    seed = all_oracle_seeds[0]
    assert seed.oracle
    agents = seed.agent_steps()
    assert agents and all(s.model_call and s.model_call.source == "oracle" for s in agents)
    first = agents[0].model_call.request
    assert first["messages"][1]["content"] == seed.task.instruction and first["tools"]


def _copy(seed: Trajectory) -> Trajectory:
    return Trajectory.model_validate(json.loads(seed.model_dump_json()))


def test_tampered_tool_result_stops_replay_at_that_step(banking_seed):
    tool_steps = [s.index for s in banking_seed.steps if s.kind == "tool"]
    for target in tool_steps:
        bad = _copy(banking_seed)
        bad.steps[target].content = (bad.steps[target].content or "") + "\n- tampered: true"
        with pytest.raises(EnvStateDrift) as info:
            replay(bad)
        assert info.value.step == target
        assert info.value.trajectory_id == banking_seed.id
        assert "tampered" in info.value.diff


def test_tampered_state_fingerprint_names_the_changed_part(banking_seed):
    bad = _copy(banking_seed)
    target = next(s.index for s in bad.steps if s.kind == "tool")
    bad.steps[target].state_fingerprint = "0" * 64
    bad.steps[target].state_parts = {**bad.steps[target].state_parts, "bank_account": "0" * 64}
    with pytest.raises(EnvStateDrift) as info:
        replay(bad)
    assert info.value.step == target and "bank_account" in str(info.value)


def test_tampered_model_request_stops_replay_at_that_step(banking_seed):
    agent_steps = [s.index for s in banking_seed.steps if s.kind == "agent"]
    for target in agent_steps:
        bad = _copy(banking_seed)
        bad.steps[target].model_call.request["messages"][0]["content"] += " Be brief."
        with pytest.raises(PromptDrift) as info:
            replay(bad)
        assert info.value.step == target
        assert "Be brief." in info.value.diff


def test_truncated_recording_raises_recording_exhausted_never_a_live_call(banking_seed):
    short = _copy(banking_seed)
    short.steps = short.steps[:-1]  # drop the final answer: the harness will ask the model once more
    with pytest.raises(RecordingExhausted) as info:
        replay(short)
    assert info.value.step == len(short.steps)


def test_lenient_mode_logs_prompt_drift_and_goes_on(banking_seed):
    bad = _copy(banking_seed)
    target = bad.agent_steps()[1].index
    bad.steps[target].model_call.request["temperature"] = 0.9
    report = replay(bad, strict=False)
    assert report.identical and report.outcome.success


def test_prefix_replay_stops_at_the_branch_point_without_a_model(banking_seed):
    t = banking_seed.agent_steps()[1].index
    report = replay(banking_seed, until=t)
    assert report.identical and report.steps_replayed == t


def test_unpinned_hash_seed_across_processes_is_caught_as_drift(tmp_path):
    """A real nondeterminism of AgentDojo (set-ordered calendar participants) is caught, at its step."""
    script = tmp_path / "x.py"
    seed_file = tmp_path / "seed.json"
    script.write_text(
        "import sys, json\n"
        "from failforge.seeds import oracle_seed\n"
        "from failforge.replay import replay\n"
        "from failforge.trajectory import Trajectory\n"
        "if sys.argv[1] == 'record':\n"
        "    open(sys.argv[2], 'w').write(oracle_seed('agentdojo', 'workspace/user_task_9').model_dump_json())\n"
        "else:\n"
        "    r = replay(Trajectory.model_validate_json(open(sys.argv[2]).read()), raise_on_drift=False)\n"
        "    print(json.dumps(r.to_dict()))\n"
    )

    def run(hash_seed: str, *args: str) -> str:
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        return subprocess.run(
            [sys.executable, str(script), *args], env=env, capture_output=True, text=True, check=True
        ).stdout

    run("1", "record", str(seed_file))
    same = json.loads(run("1", "replay", str(seed_file)).splitlines()[-1])
    assert same["identical"]
    # Find a hash seed whose set order differs (most do); the drift must land on the calendar step.
    for other in ("2", "3", "4", "5", "6"):
        result = json.loads(run(other, "replay", str(seed_file)).splitlines()[-1])
        if not result["identical"]:
            assert result["drift"]["type"] == "EnvStateDrift"
            assert "create_calendar_event" in result["drift"]["message"]
            break
    else:
        pytest.fail("five different hash seeds all produced the recorded participant order")
