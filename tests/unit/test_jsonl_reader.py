"""The one JSONL reader: every kind of bad line is named (file, line, field) and skipped, the rest is read,
by every reader of the project (seeds, gold, records, predictions, importers, recordings, ledger, report).

A structural test also checks that no module but ``failforge/jsonl.py`` decodes JSON it read from a file."""

from __future__ import annotations

import ast
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from _sources import source_files, source_text, source_tree
from failforge.errors import ConfigError, SeedFormatError
from failforge.jsonl import parse_json, read_json, read_jsonl

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "failforge"
FIXTURES = ROOT / "tests" / "fixtures" / "attribution"
SEEDS = SRC / "data" / "seeds" / "agentdojo_demo.jsonl"

HUGE_INT = b'{"id": 1' + b"0" * 5000 + b"}"
DEEP = b"[" * 100_000 + b"]" * 100_000
#: (bad line, field, words of the problem), one per kind of bad line.
BAD_LINES = [
    (b'{"id": "caf\xe9"}', "<encoding>", "not UTF-8 text (byte 0xe9 at offset 11 of the line)"),
    (b'{"id": "torn', "<json>", "not valid JSON: Unterminated string"),
    (HUGE_INT, "<json>", f"an integer of more than {sys.get_int_max_str_digits()} digits"),
    (DEEP, "<json>", "nested too deeply"),
    (b"[1, 2, 3]", "<record>", "expected a JSON object, found a list"),
    (b'"just a string"', "<record>", "expected a JSON object, found a string"),
]


def _mixed(path: Path, good: list[bytes]) -> Path:
    """good[0], every bad line, good[1:] (blank lines between), so line numbers are known: bad lines are 2..7."""
    lines = [good[0], *[bad for bad, _, _ in BAD_LINES], b"", *good[1:]]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _first_lines(path: Path, n: int) -> list[bytes]:
    return [line for line in path.read_bytes().splitlines() if line.strip()][:n]


def test_every_kind_of_bad_line_is_named_and_the_rest_is_read(tmp_path):
    path = _mixed(tmp_path / "mixed.jsonl", [b'\xef\xbb\xbf{"n": 1}', b'{"n": 2}', b'{"n": 3}'])
    items = list(read_jsonl(path))
    good = [item for item in items if isinstance(item, tuple)]
    bad = [item for item in items if isinstance(item, SeedFormatError)]
    assert good == [(1, {"n": 1}), (9, {"n": 2}), (10, {"n": 3})]  # a byte-order mark on line 1 is not a problem
    assert [(e.line, e.field) for e in bad] == [(2 + i, field) for i, (_, field, _) in enumerate(BAD_LINES)]
    for error, (_, _, words) in zip(bad, BAD_LINES, strict=True):
        assert words in error.problem and error.path == str(path)
        assert str(error).startswith(f"{path}:{error.line}: field '{error.field}': ") and "\n" not in str(error)


def test_a_file_that_cannot_be_read_at_all_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        list(read_jsonl(tmp_path / "missing.jsonl"))
    with pytest.raises(ConfigError, match="is a directory"):
        list(read_jsonl(tmp_path))


def test_whole_json_documents_and_strings_get_the_same_diagnostics(tmp_path):
    (tmp_path / "log.json").write_bytes(b'{\n  "a": 1,\n  "b": "\xff"\n}\n')
    with pytest.raises(SeedFormatError) as err:
        read_json(tmp_path / "log.json")
    assert (err.value.line, err.value.field) == (3, "<encoding>")
    (tmp_path / "big.json").write_bytes(b'{\n  "a": ' + b"9" * 4400 + b"\n}")
    with pytest.raises(SeedFormatError, match="digits"):
        read_json(tmp_path / "big.json")
    (tmp_path / "syntax.json").write_text('{\n  "a": 1,\n  "b": \n}\n')
    with pytest.raises(SeedFormatError) as err:
        read_json(tmp_path / "syntax.json")
    assert err.value.line == 4 and "not valid JSON" in err.value.problem
    assert parse_json('{"a": [1, 2]}') == {"a": [1, 2]}
    with pytest.raises(SeedFormatError, match="nested too deeply"):
        parse_json("[" * 100_000)


# --- every reader of the project goes through it -------------------------------------------------


def _seed_readers(path: Path) -> tuple[int, list[str]]:
    from failforge.trajectory import load_jsonl

    good, bad = load_jsonl(path)
    return len(good), [f"{e.line}:{e.field}" for e in bad]


def _campaign_seeds(path: Path) -> tuple[int, list[str]]:
    from failforge.campaign._run import load_seeds  # what `generate` reads its seeds with

    good, bad = load_seeds([str(path)])
    return len(good), [f"{e.line}:{e.field}" for e in bad]


def _records(path: Path) -> tuple[int, list[str]]:
    from failforge.attribution import load_records

    good, bad = load_records(path)
    return len(good), [f"{p.line}:{p.field}" for p in bad]


def _predictions(path: Path) -> tuple[int, list[str]]:
    from failforge.attribution._predictions import load_predictions

    good, bad = load_predictions(path)
    return len(good), [f"{p.line}:{p.field}" for p in bad]


def _importer(fmt: str):  # type: ignore[no-untyped-def]
    def read(path: Path) -> tuple[int, list[str]]:
        from failforge.attribution import summarise
        from failforge.plugins import importers

        records, summary = summarise(importers.get(fmt)(path))
        return len(records), [f"{p.line}:{p.field}" for p in summary.problems]

    return read


def _recorded_calls(path: Path) -> tuple[int, list[str]]:
    from failforge.attribution._run import CallStore

    unread: list[str] = []
    calls = CallStore.load(path, unread)
    return sum(len(v) for v in calls.values()), [
        ":".join(re.search(r":(\d+): field '([^']+)'", u).groups()) for u in unread
    ]  # type: ignore[union-attr]


EXPECTED_BAD = [f"{2 + i}:{field}" for i, (_, field, _) in enumerate(BAD_LINES)]


@pytest.mark.parametrize(
    "read,source,n",
    [
        (_seed_readers, SEEDS, 3),
        (_campaign_seeds, SEEDS, 3),
        (_records, FIXTURES / "metrics" / "records.jsonl", 3),
        (_predictions, FIXTURES / "metrics" / "predictions.jsonl", 3),
        (_importer("failforge"), FIXTURES / "failforge_gold.jsonl", 3),
        (_importer("tracertraj"), FIXTURES / "tracertraj" / "sample.jsonl", 3),
        (_recorded_calls, FIXTURES / "recording" / "all-at-once" / "calls.jsonl", 2),
    ],
    ids=["seeds", "generate-seeds", "records", "predictions", "failforge-gold", "tracertraj", "judge-recording"],
)
def test_each_reader_loses_only_the_bad_lines(tmp_path, read, source, n):
    path = _mixed(tmp_path / source.name, _first_lines(source, n))
    good, bad = read(path)
    assert good == n and bad == EXPECTED_BAD


def test_whowhen_pro_release_file_loses_only_its_bad_lines(tmp_path):
    root = tmp_path / "wwp"
    shutil.copytree(FIXTURES / "whowhen_pro", root)
    text = root / "data" / "text.jsonl"
    rows = _first_lines(text, 10)
    _mixed(text, rows)
    good, bad = _importer("whowhen-pro")(root)
    expected_good = sum(len(_first_lines(f, 100)) for f in (FIXTURES / "whowhen_pro" / "data").glob("*.jsonl"))
    assert good == expected_good and bad == EXPECTED_BAD


def test_who_and_when_logs_with_a_bad_byte_or_a_huge_integer_lose_only_that_log(tmp_path):
    folder = tmp_path / "Algorithm-Generated"
    folder.mkdir()
    for n in (1, 2, 3):
        shutil.copy(FIXTURES / "who_and_when" / "Algorithm-Generated" / f"{n}.json", folder / f"{n}.json")
    raw = (folder / "2.json").read_bytes()
    (folder / "2.json").write_bytes(raw.replace(b'"question"', b'"qu\xffestion"', 1))
    log = json.loads((folder / "3.json").read_text())
    (folder / "3.json").write_text(
        json.dumps(log, indent=1).replace('"question_ID": ', '"big": ' + "1" * 5000 + ', "question_ID": ', 1)
    )
    good, bad = _importer("whowhen")(folder)
    assert good == 1 and bad[0].endswith(":<encoding>") and bad[1].endswith(":<json>")


def test_campaign_folders_read_through_it(tmp_path):
    """The ledger's reconciliation, the lines campaign code validates itself (original arms) and the
    report: a bad line costs only itself."""
    from failforge.jobs import attempt_ids_in
    from failforge.report import read_records
    from failforge.trajectory import open_records

    gold = _mixed(tmp_path / "gold.jsonl", _first_lines(FIXTURES / "failforge_gold.jsonl", 3))
    assert len(attempt_ids_in(gold)) == 3
    lines = list(open_records(gold))
    assert [n for n, text in lines if isinstance(text, str)] == [1, 9, 10]
    assert [(n, text.field) for n, text in lines if isinstance(text, SeedFormatError)] == [
        (2 + i, f) for i, (_, f, _) in enumerate(BAD_LINES)
    ]
    problems: list[str] = []
    records = list(read_records(tmp_path, statuses=("gold",), problems=problems))
    assert len(records) == 3 and [re.search(r":(\d+): field ", p).group(1) for p in problems] == [
        str(2 + i) for i in range(len(BAD_LINES))
    ]  # type: ignore[union-attr]


# --- nothing else reads JSON from a file ----------------------------------------------------------


def _reads_a_file(node: ast.AST, handles: set[str]) -> bool:
    """``open(...)``, ``path.read_text()`` / ``read_bytes()``, or ``h.read()`` of a handle bound by ``with open``."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            if isinstance(func, ast.Name) and func.id == "open":
                return True
            if isinstance(func, ast.Attribute) and func.attr in ("read_text", "read_bytes"):
                return True
            if (
                isinstance(func, ast.Attribute)
                and func.attr in ("read", "readline", "readlines")
                and isinstance(func.value, ast.Name)
                and func.value.id in handles
            ):
                return True
    return False


def _json_calls(tree: ast.AST) -> list[ast.Call]:
    out = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("load", "loads", "model_validate_json")
        ):
            base = node.func.value
            if (
                isinstance(base, ast.Name) and base.id in ("json", "orjson")
            ) or node.func.attr == "model_validate_json":
                out.append(node)
    return out


def test_no_module_but_the_reader_decodes_json_it_read_from_a_file():
    offenders = []
    for file in source_files():
        if file.name == "jsonl.py" and file.parent == SRC:
            continue
        if "json" not in source_text(file):  # no json.load(s), orjson or model_validate_json call can be in it
            continue
        tree = source_tree(file)
        handles: set[str] = set()
        for node in ast.walk(tree):  # names bound to an open file: `with open(...) as h`
            if isinstance(node, ast.With):
                for item in node.items:
                    if _reads_a_file(item.context_expr, set()) and isinstance(item.optional_vars, ast.Name):
                        handles.add(item.optional_vars.id)
        for call in _json_calls(tree):
            if call.func.attr == "load" or any(_reads_a_file(arg, handles) for arg in call.args):  # type: ignore[attr-defined]
                offenders.append(f"{file.relative_to(SRC)}:{call.lineno}")
        for node in ast.walk(tree):  # `for line in h: json.loads(line)`
            if (
                isinstance(node, ast.For)
                and any(isinstance(n, ast.Name) and n.id in handles for n in ast.walk(node.iter))
                and _json_calls(node)
            ):
                offenders.append(f"{file.relative_to(SRC)}:{node.lineno}")
    assert offenders == [], "JSON read from a file outside failforge.jsonl (use read_jsonl / read_json): " + ", ".join(
        offenders
    )
