"""A DA-Bench data folder of the wrong shape is a one-line ConfigError naming the file, never a traceback or a read
of a file outside the folder (review of issue 35)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from failforge.environments.dabench._data import bundled_dir, load_questions, question, table_path
from failforge.errors import ConfigError

Q18 = next(line for line in (bundled_dir() / "da-dev-questions.jsonl").read_text().splitlines() if '"id": 18,' in line)


def _folder(tmp_path: Path, questions: str = Q18, labels: str | None = None) -> Path:
    root = tmp_path / "data"
    (root / "tables").mkdir(parents=True)
    (root / "da-dev-questions.jsonl").write_text(questions + "\n")
    label_text = (bundled_dir() / "da-dev-labels.jsonl").read_text() if labels is None else labels + "\n"
    (root / "da-dev-labels.jsonl").write_text(label_text)
    return root


@pytest.mark.parametrize(
    "labels",
    [
        '{"id": "x", "common_answers": []}',
        '{"id": 18, "common_answers": 3}',
        '{"common_answers": []}',
        '{"id": 18, "common_answers": [["a", "b", "c"]]}',
    ],
)
def test_a_malformed_labels_row_is_a_config_error_naming_its_line(tmp_path: Path, labels: str) -> None:
    with pytest.raises(ConfigError, match=r"da-dev-labels.jsonl:1: expected"):
        load_questions(_folder(tmp_path, labels=labels))


def test_a_question_missing_a_field_is_a_config_error_naming_the_field(tmp_path: Path) -> None:
    row = json.loads(Q18)
    del row["format"]
    with pytest.raises(ConfigError, match=r"da-dev-questions.jsonl:1: field 'format'"):
        load_questions(_folder(tmp_path, questions=json.dumps(row)))


def test_a_folder_where_no_question_has_a_label_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no question"):
        load_questions(_folder(tmp_path, questions='{"id": 1}'))


def _q18(root: Path):  # type: ignore[no-untyped-def]
    return question(root, "dabench-18")


def test_a_table_linked_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    os.symlink("/etc/passwd", root / "tables" / _q18(root).file_name)
    with pytest.raises(ConfigError, match="is a link out of"):
        table_path(root, _q18(root))


def test_a_table_that_is_a_fifo_is_refused_without_reading_it(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    os.mkfifo(root / "tables" / _q18(root).file_name)
    with pytest.raises(ConfigError, match="not a regular file"):
        table_path(root, _q18(root))


def test_a_file_name_that_leaves_the_tables_folder_is_refused(tmp_path: Path) -> None:
    row = json.loads(Q18)
    row["file_name"] = "../../../../etc/passwd"
    root = _folder(tmp_path, questions=json.dumps(row))
    with pytest.raises(ConfigError, match="not a plain file name"):
        table_path(root, _q18(root))


def test_a_missing_table_is_named_and_a_present_one_is_found(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    q = _q18(root)
    with pytest.raises(ConfigError, match="which is not in"):
        table_path(root, q)
    shutil.copy(bundled_dir() / "tables" / q.file_name, root / "tables" / q.file_name)
    assert table_path(root, q) == root / "tables" / q.file_name
