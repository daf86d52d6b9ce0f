"""The DA-Bench dev set on disk: questions, closed-form labels and the CSV tables they read.

A data folder has InfiAgent's layout (``examples/DA-Agent/data``): ``da-dev-questions.jsonl``,
``da-dev-labels.jsonl`` and the tables in ``da-dev-tables/`` (upstream's name) or ``tables/`` (the copy in
``../shared/datasets/da_bench``). Without ``--data-dir`` the 18-question subset failforge ships
(``failforge/data/dabench``, Apache-2.0, NOTICE.md there) is used, so the demo and unit tests need no download.
``FAILFORGE_DABENCH_DIR`` names a folder for tests and CI (the option wins over it).
"""

from __future__ import annotations

import functools
import os
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from failforge.errors import ConfigError
from failforge.jsonl import read_jsonl

QUESTIONS = "da-dev-questions.jsonl"
LABELS = "da-dev-labels.jsonl"
TABLE_FOLDERS = ("tables", "da-dev-tables")
ENV_VAR = "FAILFORGE_DABENCH_DIR"


class Question(BaseModel):
    """One DA-Bench question as the questions file writes it, with its label attached."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: int
    question: str
    concepts: list[str] = []
    constraints: str = ""
    format: str
    file_name: str
    level: str = ""
    #: The closed-form answer: ``[[name, value], ...]`` exactly as the labels file writes it.
    common_answers: list[tuple[str, str]] = []


def bundled_dir() -> Path:
    """The demo subset shipped in the package."""
    return Path(str(resources.files("failforge") / "data" / "dabench"))


def resolve_dir(data_dir: str | None) -> Path:
    """The data folder a run reads: the option, else ``FAILFORGE_DABENCH_DIR``, else the shipped subset."""
    chosen = data_dir or os.environ.get(ENV_VAR) or ""
    path = Path(chosen).expanduser().resolve() if chosen else bundled_dir()
    if not (path / QUESTIONS).is_file() or not (path / LABELS).is_file():
        raise ConfigError(
            f"DA-Bench data folder {path} has no {QUESTIONS} and {LABELS}: pass --data-dir a copy of "
            "InfiAgent's examples/DA-Agent/data"
        )
    return path


def tables_dir(root: Path) -> Path:
    for name in TABLE_FOLDERS:
        if (root / name).is_dir():
            return root / name
    raise ConfigError(f"DA-Bench data folder {root} has no tables folder ({' or '.join(TABLE_FOLDERS)})")


@functools.lru_cache(maxsize=8)
def load_questions(root: Path) -> dict[int, Question]:
    """Every question of the folder with its label, by id (one without a label is left out: it cannot be scored)."""
    labels: dict[int, list[tuple[str, str]]] = {}
    for item in read_jsonl(root / LABELS):
        if isinstance(item, Exception):
            raise ConfigError(str(item))
        row = item[1]
        labels[int(row["id"])] = [(str(name), str(value)) for name, value in row["common_answers"]]
    questions: dict[int, Question] = {}
    for item in read_jsonl(root / QUESTIONS):
        if isinstance(item, Exception):
            raise ConfigError(str(item))
        row = item[1]
        qid = int(row["id"])
        if qid in labels:
            questions[qid] = Question.model_validate({**row, "common_answers": labels[qid]})
    return questions


def question(root: Path, task_id: str) -> Question:
    """The question named ``dabench-<id>`` (or just ``<id>``)."""
    raw = task_id.removeprefix("dabench-")
    found = load_questions(root).get(int(raw)) if raw.isdigit() else None
    if found is None:
        raise ConfigError(
            f"DA-Bench has no question {task_id!r} in {root}; "
            f"ids look like dabench-0 .. dabench-{max(load_questions(root))}"
        )
    return found


def task_id_of(question_id: int) -> str:
    return f"dabench-{question_id}"


__all__ = [
    "ENV_VAR",
    "Question",
    "bundled_dir",
    "load_questions",
    "question",
    "resolve_dir",
    "tables_dir",
    "task_id_of",
]
