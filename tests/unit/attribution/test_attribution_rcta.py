"""RCTA-like: segmentation, handoff evidence, candidate pooling and validation, without a model."""

from __future__ import annotations

from failforge.attribution import FailureStep, Gold, LabelledFailure, Origin, TaskInfo
from failforge.attribution._prompts import PromptConfig
from failforge.attribution._rcta import (
    Candidate,
    Segment,
    candidate_block,
    handoff_for,
    parse_candidates,
    pool,
    reply_fields,
    segments,
    validate,
)


def _record(n: int, recipients: dict[int, str] | None = None) -> LabelledFailure:
    recipients = recipients or {}
    steps = [
        FailureStep(index=0, kind="system", agent="system", content="framing"),
        FailureStep(index=1, kind="user", agent="user", content="task"),
    ]
    for i in range(2, n):
        agent = "Planner" if i in recipients else ("Coder" if i % 2 else "Tester")
        steps.append(
            FailureStep(
                index=i,
                kind="agent",
                agent=agent,
                content=f"says {i}",
                recipient=recipients.get(i),
                sender=agent if i in recipients else None,
            )
        )
    return LabelledFailure(
        id="r",
        source="s",
        framework="f",
        topology="multi",
        agents=["Planner", "Coder", "Tester"],
        task=TaskInfo(question="q"),
        steps=steps,
        gold=Gold(agent="Coder", step=5, step_label="5"),
        origin=Origin(format="t", path="t", step_convention="t"),
    )


def test_segments_are_consecutive_non_system_steps_with_stable_ids() -> None:
    got = segments(_record(97))
    assert [s.id for s in got] == ["seg-0", "seg-1", "seg-2"]
    assert [(s.steps[0], s.steps[-1], len(s.steps)) for s in got] == [(1, 40, 40), (41, 80, 40), (81, 96, 16)]


def test_handoff_is_the_nearest_earlier_one_addressed_to_the_agent_exactly() -> None:
    record = _record(20, {4: "Coder", 8: "Tester", 10: "coder"})
    assert handoff_for(record, 13) == (4, True)  # 10 is addressed to "coder": case-sensitive, not Coder's
    assert handoff_for(record, 12) == (8, True)
    assert handoff_for(record, 3) == (None, False)
    record2 = _record(20, {4: "Tester"})
    assert handoff_for(record2, 7) == (4, False)  # plan context only: nothing addressed to Coder
    block, shown = candidate_block(record, [Candidate(13, 0), Candidate(3, 1)], PromptConfig())
    assert (
        shown == {4}
        and "handoff to this agent: Step 4 - Planner" in block
        and "handoff: none recorded before it" in block
    )


def test_pool_orders_by_priority_then_id_and_recovered_counts_against() -> None:
    seg = Segment(id="seg-0", steps=list(range(1, 20)))
    found, problems = parse_candidates("12 root; 5 manifestation; 3 root recovered; 30 root; 7", seg)
    assert problems == ["seg-0: proposed step 30 is not in the segment"]
    assert [(c.step, c.priority) for c in pool(found)] == [(5, 0), (12, 1), (7, 3), (3, 4)]
    assert [c.step for c in pool([*found, Candidate(7, 0)], limit=2)] == [5, 7]
    assert parse_candidates("none", seg) == ([], [])


def test_validation_keeps_valid_fields_and_names_the_others() -> None:
    record = _record(20, {4: "Coder"})
    ok, problems = validate(
        record, reply_fields("Role: Coder\nStep: 5\nHandoff: 4\nMode: R.3\nReason: x"), {4}, PromptConfig()
    )
    assert ok == {"agent": "Coder", "step": 5, "step_text": "5", "handoff": 4, "mode": "R.3"} and problems == {}
    bad, problems = validate(record, reply_fields("Role: Nobody\nStep: 0\nHandoff: 8\nMode: R.3"), {4}, PromptConfig())
    assert bad == {"mode": "R.3"}  # step 0 is the system prompt: not a candidate step
    assert (
        set(problems) == {"agent", "step", "handoff"}
        and "Handoff 8 is not one of the handoffs shown" in problems["handoff"]
    )
    free, problems = validate(
        record,
        reply_fields("Role: coder\nStep: 7\nMode: it reasoned from a wrong fact"),
        set(),
        PromptConfig(menu=False),
    )
    assert free["agent"] == "Coder" and free["step"] == 7 and free["description"] == "it reasoned from a wrong fact"


def test_a_character_reference_or_the_prompts_own_hint_proposes_no_step() -> None:
    """What the embedded model wrote on Who&When Hand-Crafted 13: the format hint copied, its quotes as
    '&#34;'. Neither the example steps (12, 15) nor the 34 of '&#34;' is a proposal."""
    seg = Segment(id="seg-0", steps=list(range(0, 40)))
    echoed = "(step numbers with tags, e.g. &#34;12 root; 15 manifestation&#34;; &#34;none; if nothing is relevant)"
    assert parse_candidates(echoed, seg) == (
        [],
        ["seg-0: the reply repeats the format hint instead of proposing steps"],
    )
    found, problems = parse_candidates("&#34;12 root&#34;", seg)
    assert [c.step for c in found] == [12] and problems == []
