"""DA-Bench's closed-form rule as upstream's eval_closed_form.py applies it, the shipped subset, the scripted analyst,
and the interpreter program's determinism (run in-process: it is standard library only)."""

from __future__ import annotations

import ast
import builtins

import pytest

from failforge.environments.dabench import _program
from failforge.environments.dabench._data import bundled_dir, load_questions, question, resolve_dir
from failforge.environments.dabench._oracle import analyst_responses
from failforge.environments.dabench._scoring import extract_answers, format_answer, is_equal, score
from failforge.errors import ConfigError

SIX = [
    ("mean_fare_elderly", "43.47"),
    ("mean_fare_teenager", "31.98"),
    ("mean_fare_child", "31.09"),
    ("mean_fare_adult", "35.17"),
]


def test_multi_answer_question_needs_every_sub_answer_in_any_order() -> None:
    response = (
        "@mean_fare_adult[35.17] @mean_fare_child[31.09] and @mean_fare_teenager[31.98], @mean_fare_elderly[43.47]"
    )
    result = score(response, SIX)
    assert result.correct and result.fraction == 1.0


def test_a_missing_sub_answer_fails_the_question_and_counts_in_the_fraction() -> None:
    result = score("@mean_fare_adult[35.17] @mean_fare_child[31.09] @mean_fare_teenager[31.98]", SIX)
    assert not result.correct
    assert result.fraction == 0.75
    missing = [s for s in result.sub_answers if not s.correct]
    assert [(s.name, s.found) for s in missing] == [("mean_fare_elderly", None)]


@pytest.mark.parametrize(
    ("found", "label", "equal"),
    [
        ("34.65", "34.65", True),  # the same string
        ("34.650", "34.65", True),  # trailing zero: equal as floats
        (" 34.65 ", "34.65", True),  # float() reads surrounding whitespace
        ("34.6500001", "34.65", True),  # within 1e-6
        ("34.651", "34.65", False),  # beyond it
        ("3.465e1", "34.65", True),  # exponent notation
        ("1,000", "1000", False),  # no thousands separators
        ("True", "True", True),  # non-numbers only as equal strings
        ("true", "True", False),
        ("nan", "nan", True),  # equal as strings, though NaN is never equal as a float
        ("inf", "1e400", False),  # inf - inf is NaN: not within the tolerance
        (None, "1", False),
    ],
)
def test_number_formats_follow_is_equal(found: str | None, label: str, equal: bool) -> None:
    assert is_equal(found, label) is equal


def test_extraction_is_non_greedy_and_a_repeated_name_keeps_its_last_value() -> None:
    assert extract_answers("@a[1] text @b[x]y] @a[2]") == {"a": "2", "b": "x"}
    assert not score("@a[1] @a[2]", [("a", "1")]).correct
    assert score("@a[2] @a[1]", [("a", "1")]).correct


def test_a_name_the_label_repeats_is_checked_once_against_its_last_value() -> None:
    label = [
        ("r", "0.38"),
        ("sig", "significant"),
        ("sig", "non-significant"),
        ("r", "0.78"),
        ("r", "0.56"),
    ]  # as question 734
    result = score("@r[0.56] @sig[non-significant]", label)
    assert result.correct and [(s.name, s.label) for s in result.sub_answers] == [
        ("r", "0.56"),
        ("sig", "non-significant"),
    ]
    assert not score("@r[0.38] @sig[significant]", label).correct


def test_no_answer_is_a_failure() -> None:
    assert not score(None, [("a", "1")]).correct
    assert not score("", [("a", "1")]).correct
    assert not score("the mean is 1", [("a", "1")]).correct


def test_the_shipped_subset_has_its_labels_tables_and_license() -> None:
    root = bundled_dir()
    questions = load_questions(root)
    assert len(questions) == 18
    assert "Apache License" in (root / "LICENSE").read_text() and "InfiAgent" in (root / "NOTICE.md").read_text()
    for q in questions.values():
        assert q.common_answers and (root / "tables" / q.file_name).is_file()
    assert question(root, "dabench-18").common_answers == [("mean_mar_2019", "171.44"), ("sd_mar_2019", "188.25")]
    with pytest.raises(ConfigError, match="no question"):
        question(root, "dabench-99999")
    assert resolve_dir(str(root)) == root


def test_the_scripted_analyst_answers_from_a_variable_in_four_code_steps() -> None:
    q = question(bundled_dir(), "dabench-18")
    steps = analyst_responses(q)
    assert len(steps) == 4 and all("<code>" in s and s.rstrip().endswith("</code>") for s in steps)
    ns: dict[str, object] = {"__builtins__": builtins, "final_answer": _program.final_answer}
    exec(steps[2].split("<code>")[1].split("</code>")[0], ns)  # the answers, as a dict in the namespace
    logs, output, error, final = _program.run_block(steps[3].split("<code>")[1].split("</code>")[0], ns, [])
    assert final and error is None
    assert score(output, list(q.common_answers)).correct
    assert output == format_answer(list(q.common_answers))


def test_a_forbidden_import_names_the_allow_list_sorted() -> None:
    ns: dict[str, object] = {"__builtins__": builtins}
    allowed = ["pandas", "math", "collections", "re"]
    _, _, error, _ = _program.run_block("import os\n", ns, allowed)
    assert (
        error == "Code execution failed at line 'import os' due to: InterpreterError: Import of os is not allowed. "
        "Authorized imports are: ['collections', 'math', 'pandas', 're']"
    )


def test_prints_last_value_and_errors_are_reported_as_smolagents_words_them() -> None:
    ns: dict[str, object] = {"__builtins__": builtins}
    logs, output, error, final = _program.run_block("x = 2\nprint('x is', x)\nx * 21", ns, [])
    assert (logs, output, error, final) == ("x is 2\n", "42", None, False)
    logs, output, error, _ = _program.run_block("print('before')\ny = x / 0\nprint('after')", ns, [])
    assert (
        logs == "before\n"
        and error == "Code execution failed at line 'y = x / 0' due to: ZeroDivisionError: division by zero"
    )
    assert ns["x"] == 2 and "y" not in ns


def test_the_namespace_fingerprint_is_independent_of_set_order_and_names_changes() -> None:
    a = _program.namespace_fingerprint({"s": {"b", "a", "c"}, "f": lambda v: v + 1, "n": 1.5}, 10_000)
    b = _program.namespace_fingerprint({"s": {"c", "a", "b"}, "f": lambda v: v + 1, "n": 1.5}, 10_000)
    assert a == b
    c = _program.namespace_fingerprint({"s": {"b", "a", "c"}, "f": lambda v: v + 2, "n": 1.5}, 10_000)
    assert [k for k in a if a[k] != c[k]] == ["f"]
    over = _program.namespace_fingerprint({"big": "x" * 200}, 100)
    assert over["big"] == "builtins.str|over budget (202 bytes)"
    ast.parse(_program.__loader__.get_source(_program.__name__) or "")  # the program parses as it is sent


def test_extraction_equals_upstreams_pattern_on_random_text() -> None:
    """The linear extraction gives exactly ``dict(ANSWER_PATTERN.findall(...))``, upstream's reading."""
    import random

    from failforge.environments.dabench._scoring import ANSWER_PATTERN, extract_answers

    rng = random.Random(35)
    pieces = ["@", "a", "b_1", "[", "]", "\n", " ", "@x[", "]]", "é", "1.5", "@@", "[["]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 30)))
        assert extract_answers(text) == dict(ANSWER_PATTERN.findall(text)), text


def test_a_megabyte_of_unclosed_answers_is_read_without_hanging() -> None:
    """``@a[`` repeated over 1 MB with no ``]`` on its line: upstream's pattern rescans the rest of the line from
    each one (quadratic: about half an hour); the extraction is linear. The alarm turns a hang into a failure."""
    import signal

    from failforge.environments.dabench._scoring import score

    def hung(signum: int, frame: object) -> None:
        raise TimeoutError("extracting the answers of a 1 MB response did not finish in 20 s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        result = score("@a[" * 350_000 + "\n@b[2]", [("a", "1"), ("b", "2")])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert result.extracted == {"b": "2"}
    assert [s.correct for s in result.sub_answers] == [False, True]
