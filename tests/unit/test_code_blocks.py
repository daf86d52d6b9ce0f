"""Code blocks are read from a CodeAgent step's text in linear time, exactly as ``CODE_BLOCK.findall`` reads them
(review of issue 35: an unclosed ``<code>`` followed by a run of whitespace took cubic time, 2,000 spaces 2.5 s,
in the planner, the tell filter and the exporter)."""

from __future__ import annotations

import random
import signal

from failforge.judgement import CODE_BLOCK, code_blocks


def test_the_blocks_are_the_patterns_blocks_on_random_text() -> None:
    rng = random.Random(35)
    pieces = ["<code>", "</code>", "```python\n", "```py \n\n", "```", " ", "\n", "\t", "x = 1", "\u2003", "<", "py"]
    for _ in range(4000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 14)))
        assert code_blocks(text) == [a or b for a, b in CODE_BLOCK.findall(text)], repr(text)


def test_an_unclosed_block_before_a_run_of_whitespace_is_read_at_once() -> None:
    def hung(signum: int, frame: object) -> None:
        raise TimeoutError("reading the code blocks did not finish in 20 s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        blocks = code_blocks("```python\nz = 1\n```\n<code>" + " " * 20_000 + "x")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert blocks == ["z = 1\n"]
