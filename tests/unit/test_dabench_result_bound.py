"""The interpreter's result line is bounded (review of issue 35): a result over the sandbox's reply limit is cut
deterministically instead of getting the interpreter killed (a live process) or leaving failforge an unreadable
result (a fresh process per block); a result that fits is unchanged."""

from __future__ import annotations

import json

from failforge.environments.dabench import _program


def _result(**fields: object) -> dict[str, object]:
    base: dict[str, object] = {"logs": "", "output": "None", "error": None, "is_final_answer": False, "namespace": {}}
    return {**base, **fields}


def test_a_result_that_fits_is_unchanged() -> None:
    result = _result(logs="x" * 40_000, output="y" * 30_000, namespace={"a": "builtins.int|00"})
    assert _program.fit(result, 100_000) == json.dumps(result, sort_keys=True)
    assert _program.fit(result, None) == json.dumps(result, sort_keys=True)


def test_a_large_last_value_is_cut_as_smolagents_cuts_it_and_fits() -> None:
    long = "".join(str(i % 10) for i in range(300_000))
    text = _program.fit(_result(output=long), 60_000)
    assert len(text) <= 60_000
    output = json.loads(text)["output"]
    # what smolagents' memory shows of the full value is what it shows of the cut one
    assert output == _program._smolagents_truncate(long) == _program._smolagents_truncate(output)


def test_non_ascii_logs_and_a_long_error_are_halved_until_the_line_fits() -> None:
    text = _program.fit(_result(logs="é" * 50_000, error="E" * 500_000), 262_000)
    body = json.loads(text)
    assert len(text) <= 262_000
    assert body["logs"].startswith("é" * 1000) and "result was over 262000 bytes" in body["logs"]
    assert "result was over" in body["error"]


def test_many_names_fold_into_one_part_that_still_changes_with_any_of_them() -> None:
    namespace = {f"v{i}": f"builtins.int|{i:016x}" for i in range(20_000)}
    namespace["n" * 1_000_000] = "builtins.int|0"
    first = json.loads(_program.fit(_result(namespace=namespace), 60_000))
    assert len(json.dumps(first)) <= 60_000
    assert "n" * 1_000_000 not in first["namespace"] and "v0" in first["namespace"]
    assert first["namespace"]["(folded)"].startswith(f"{20_001 - (len(first['namespace']) - 1)} names|")
    namespace["v9999"] = "builtins.int|changed"
    second = json.loads(_program.fit(_result(namespace=namespace), 60_000))
    assert second["namespace"]["(folded)"] != first["namespace"]["(folded)"]
    assert _program.fit(_result(namespace=namespace), 60_000) == json.dumps(second, sort_keys=True)
