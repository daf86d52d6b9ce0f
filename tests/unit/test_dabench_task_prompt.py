"""The CodeAgent's task prompt against Who&When Pro's released DA-Bench prompts, byte for byte
(tests/fixtures/dabench/release_task_prompts.json: the first user turn of two released smolagents/dabench rows,
with the DA-Bench question records they were made from; its ``source`` names where they come from)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from failforge.environments.dabench import instruction_for
from failforge.environments.dabench._data import Question

RELEASE = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "dabench" / "release_task_prompts.json").read_text("utf-8")
)


@pytest.mark.parametrize("row", RELEASE["rows"], ids=[r["release_row"] for r in RELEASE["rows"]])
def test_the_task_prompt_is_the_releases_byte_for_byte(row: dict[str, object]) -> None:
    prompt = instruction_for(Question.model_validate(row["question"]))
    assert prompt.encode("utf-8") == str(row["prompt"]).encode("utf-8")
