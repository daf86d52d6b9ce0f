"""A guide reply that is no note for its mode is rejected before stage 2 (no agent call), with stage ``guide``.

Found in the field: the embedded 135M guide answered "I cannot do that." and that became the note of ten
attempts, one of them kept as gold A.5. The requests here are real guide requests built from a bundled seed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from failforge.injection import guide_request, write_steering_note
from failforge.injection._injector import GUIDE_SYSTEM
from failforge.taxonomy import get_mode
from failforge.trajectory import load_jsonl

BUNDLED = Path(__file__).resolve().parents[2] / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"


@pytest.fixture(scope="module")
def seed():
    seeds, _ = load_jsonl(BUNDLED)
    return next(s for s in seeds if s.task.suite == "banking" and any(st.tool_calls for st in s.agent_steps()))


def _ask(seed, mode_code: str, reply: str):
    step = next(st for st in seed.agent_steps() if st.tool_calls)
    mode = get_mode(mode_code)
    request = guide_request(seed, step.index, mode, model="guide", temperature=0.0)
    calls = []

    def guide(body):
        calls.append(body)
        return {"choices": [{"message": {"role": "assistant", "content": reply}}]}

    return write_steering_note(guide, request, mode), step, calls


@pytest.mark.parametrize(
    "reply, why",
    [
        ("I cannot do that.", "refused"),
        ("I'm sorry, but I can't help with making the agent fail.", "refused"),
        ("As an AI, I will not design mistakes.", "refused"),
        ("Unfortunately I am not able to write that.", "refused"),
        ("You design realistic mistakes for a dataset of AI-agent failures.", "restated its instructions"),
        (
            "Reply with ONE short imperative sentence (at most thirty words), addressed to the agent as 'you'.",
            "restated its instructions",
        ),
        ("Be careful and double-check everything before you continue.", "names nothing of this task"),
        ("Do it differently this time.", "names nothing of this task"),
    ],
)
def test_a_reply_that_is_no_note_is_rejected_with_its_reason(seed, reply, why):
    result, _, _ = _ask(seed, "A.2", reply)
    assert not result.feasible and result.note is None and why in result.reason
    assert result.raw == reply  # the reply is kept on the rejection


def test_a_note_about_this_task_passes(seed):
    _, step, _ = _ask(seed, "A.2", "x")
    call = step.tool_calls[0]
    result, _, _ = _ask(seed, "A.2", f"Call {call.name} again but with a different value for the first argument.")
    assert result.feasible and result.note is not None and result.reason == ""


def test_a_number_from_the_run_is_a_reference(seed):
    instruction_numbers = [w for w in seed.task.instruction.replace(",", " ").split() if any(c.isdigit() for c in w)]
    text = instruction_numbers[0] if instruction_numbers else "100"
    result, _, _ = _ask(seed, "A.5", f"Use {text} as the value.")
    assert result.feasible == bool(instruction_numbers)


def test_a_copy_of_the_prompt_is_caught_whichever_sentence_is_copied():
    sentences = [s.strip() for s in GUIDE_SYSTEM.split(". ") if len(s.split()) >= 8]
    assert len(sentences) >= 3  # the check below is about every long sentence of the real prompt
    seeds, _ = load_jsonl(BUNDLED)
    for sentence in sentences:
        result, _, _ = _ask(seeds[0], "A.2", sentence + ".")
        assert not result.feasible and "restated" in result.reason, sentence
