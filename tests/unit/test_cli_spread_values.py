"""``--task a b``: several values after one flag, where ``--task`` exists (seeds ENV, record ENV)."""

from __future__ import annotations

from failforge.cli._options import spread_values


def test_bare_words_after_a_task_flag_become_more_task_values() -> None:
    flags = ("--task",)
    assert spread_values(["--task", "a", "b", "c", "--suite", "banking"], flags) == [
        "--task",
        "a",
        "--task",
        "b",
        "--task",
        "c",
        "--suite",
        "banking",
    ]
    assert spread_values(["--task=a", "b"], flags) == ["--task=a", "--task", "b"]
    assert spread_values(["--task", "a", "--task", "b"], flags) == [
        "--task",
        "a",
        "--task",
        "b",
    ]  # the usual form is unchanged
    assert spread_values(["--suite", "banking", "x"], flags) == [
        "--suite",
        "banking",
        "x",
    ]  # another option's words are left alone
    assert spread_values(["--task", "a", "--", "b"], flags) == ["--task", "a", "--", "b"]
    assert spread_values(["--task"], flags) == ["--task"]  # click reports the missing value
