"""The run log's integrity check: a replayed step that differs from the seed's is an edited record.

The boundaries check requests, observations and fingerprints first; what reaches the run log's own
check is an edit neither caught (an answer rewritten in the step but not in its recorded response, a
tool argument changed). Replaying a real bundled seed's steps into a run log must go through, every
replayed step (the last one included) must be checked, and the error must name exactly the fields
that differ, not the whole step.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from failforge.errors import SeedIntegrityError
from failforge.runlog import Plan, RunLog
from failforge.trajectory import Trajectory, load_jsonl

BUNDLED = Path(__file__).resolve().parents[2] / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"


@pytest.fixture(scope="module")
def seed() -> Trajectory:
    good, _ = load_jsonl(BUNDLED)
    return next(s for s in good if s.id == "agentdojo-banking-user_task_3-oracle")


def _replay(seed: Trajectory, steps) -> RunLog:
    log = RunLog(trajectory_id=seed.id, expected=seed.steps, plan=Plan.replay(len(seed.steps)))
    for step in steps:
        log.append(step.model_copy(update={"phase": "replayed"}))
    return log


def test_the_seeds_own_steps_replay_through_the_log(seed):
    log = _replay(seed, seed.steps)
    assert [s.comparable() for s in log.steps] == [s.comparable() for s in seed.steps]


@pytest.mark.parametrize("where", ["first agent step", "last replayed step"])
def test_an_edited_answer_is_refused_at_its_step_naming_only_that_field(seed, where):
    agents = [s.index for s in seed.steps if s.kind == "agent"]
    index = agents[0] if where == "first agent step" else len(seed.steps) - 1
    edited = list(seed.steps)
    edited[index] = edited[index].model_copy(
        update={"content": (edited[index].content or "") + " Also, I moved 500 to savings."}
    )
    with pytest.raises(SeedIntegrityError) as info:
        _replay(seed, edited)
    err = info.value
    assert err.step == index and set(err.expected) == {"content"} and set(err.actual) == {"content"}
    assert "moved 500 to savings" in err.diff and "differs in content " in str(err)


def test_an_edited_tool_argument_is_refused(seed):
    index, step = next((s.index, s) for s in seed.steps if s.kind == "agent" and s.tool_calls)
    call = step.tool_calls[0]
    args = json.loads(call.arguments or "{}") or {"n": 1}
    key = sorted(args)[0]
    args[key] = 999 if not isinstance(args[key], int) or args[key] != 999 else 998
    edited = list(seed.steps)
    edited[index] = step.model_copy(
        update={"tool_calls": [call.model_copy(update={"arguments": json.dumps(args)}), *step.tool_calls[1:]]}
    )
    with pytest.raises(SeedIntegrityError) as info:
        _replay(seed, edited)
    assert info.value.step == index and set(info.value.expected) == {"tool_calls"}


def test_steps_after_the_branch_point_are_not_compared(seed):
    t = len(seed.steps) - 1
    log = RunLog(trajectory_id=seed.id, expected=seed.steps, plan=Plan.branch(t, changed=False))
    for step in seed.steps[:t]:
        log.append(step.model_copy(update={"phase": "replayed"}))
    different = seed.steps[t].model_copy(update={"content": "A different, live answer.", "phase": "live"})
    assert log.append(different).content == "A different, live answer."
