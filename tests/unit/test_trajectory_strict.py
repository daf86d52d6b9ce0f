"""The trajectory schema reads strictly: a value of the wrong JSON type is an error naming the field,
never silently coerced ("yes" is not a success, "1" is not an index)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from failforge.errors import SeedFormatError
from failforge.trajectory import load_jsonl, parse_line

BUNDLED = Path(__file__).resolve().parents[2] / "src" / "failforge" / "data" / "seeds"


def _seed_line() -> dict:
    return json.loads((BUNDLED / "agentdojo_multiagent_demo.jsonl").read_text().splitlines()[0])


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d["outcome"].update(success="yes"), "outcome.success"),
        (lambda d: d["outcome"].update(success=1), "outcome.success"),
        (lambda d: d["steps"][1].update(index="1"), "steps.1.index"),
        (lambda d: d["steps"][1].update(round="2"), "steps.1.round"),
        (lambda d: d["steps"][1]["model_call"].update(ordinal=0.0), "steps.1.model_call.ordinal"),
        (lambda d: d.update(oracle="true"), "oracle"),
        (lambda d: d.update(schema_version=2), "schema_version"),
        (lambda d: d["outcome"].update(score="1.0"), "outcome.score"),
    ],
)
def test_a_value_of_the_wrong_type_is_an_error_not_a_coercion(edit, field: str) -> None:
    data = _seed_line()
    assert parse_line(json.dumps(data)).outcome.success is True  # type: ignore[union-attr]
    edit(data)
    with pytest.raises(SeedFormatError, match=f"field '{field}'"):
        parse_line(json.dumps(data), "edited.jsonl", 3)


def test_every_bundled_and_fixture_record_still_reads() -> None:
    """Strictness must not reject what failforge itself wrote: the bundled seeds (schema 1 and 2) and the
    gold fixtures an importer and the report read."""
    root = Path(__file__).resolve().parents[2]
    files = [
        *BUNDLED.glob("*.jsonl"),
        root / "tests" / "fixtures" / "labels" / "demo_gold_agentdojo.jsonl",
        root / "tests" / "fixtures" / "labels" / "demo_gold_miniwob.jsonl",
        root / "tests" / "fixtures" / "attribution" / "failforge_gold.jsonl",
    ]
    for path in files:
        records, errors = load_jsonl(path)
        assert records and not errors, (path, errors[:1])
    assert (
        parse_line(json.dumps({**_seed_line(), "outcome": {**_seed_line()["outcome"], "score": 1}})).outcome.score
        == 1.0
    )  # type: ignore[union-attr]  # an integer score is a number
