"""The A.2 rule reads the columns an agent saw from its printed observations in linear time (review of issue 35:
a printed list of items ending in a backslash with no closing ``]`` took 2^n steps, a line of spaces n^2), and
reads the same columns as before on the recorded seeds."""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from failforge.injection._code_rules import _columns_seen
from failforge.trajectory import Step, Trajectory, load_jsonl

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dabench"
OLD_LISTED = re.compile(r"\[((?:\\?'[^']*\\?',?\s*)+)\]")
OLD_DTYPES = re.compile(r"(?m)^([A-Za-z_][\w .]*?)\s{2,}(?:int|float|object|bool|datetime)\d*\b")


def _old(seed: Trajectory, t: int) -> list[str]:
    seen: list[str] = []
    for step in seed.steps[1:t]:
        if step.kind == "tool":
            text = step.content or ""
            for listed in OLD_LISTED.findall(text):
                seen += re.findall(r"'([^'\\]+)'", listed)
            seen += OLD_DTYPES.findall(text.replace("\\n", "\n"))
    return list(dict.fromkeys(s.strip() for s in seen if s.strip()))


def test_the_recorded_seeds_give_the_columns_they_gave_before() -> None:
    seeds, problems = load_jsonl(FIXTURES / "seeds.jsonl")
    assert not problems and seeds
    compared = 0
    for seed in seeds:
        for t in range(len(seed.steps)):
            assert _columns_seen(seed, t) == _old(seed, t), (seed.id, t)
            compared += bool(_old(seed, t))
    assert compared  # the seeds print columns, so the comparison is not of empty lists


@contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    def hung(signum: int, frame: object) -> None:
        raise TimeoutError(f"reading the columns did not finish in {seconds} s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _seed_printing(logs: str) -> Trajectory:
    seeds, _ = load_jsonl(FIXTURES / "seeds.jsonl")
    seed = seeds[0]
    tool = next(s for s in seed.steps if s.kind == "tool")
    content = json.dumps({"is_final_answer": False, "logs": logs, "output": "None"}, sort_keys=True)
    steps: list[Step] = [seed.steps[0], tool.model_copy(update={"content": content})]
    return seed.model_copy(update={"steps": steps})


def test_a_list_of_backslash_ended_items_with_no_closing_bracket_is_read_at_once() -> None:
    seed = _seed_printing("[" + "'a\\', " * 60)
    with _deadline(20):
        assert _columns_seen(seed, 2) == []


def test_a_line_of_spaces_is_read_at_once_and_dtypes_lines_still_are() -> None:
    seed = _seed_printing("\na" + " " * 200_000 + "x\nMar.2019    float64\nmy col  int64\n")
    with _deadline(20):
        assert _columns_seen(seed, 2) == ["Mar.2019", "my col"]
