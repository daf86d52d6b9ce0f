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

from pydantic import BaseModel, ConfigDict, ValidationError

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


def table_path(root: Path, q: Question) -> Path:
    """The regular file question ``q`` reads, inside the folder's tables folder. A ``file_name`` that is not a plain
    file name, a link out of the tables folder (its bytes would be copied into the sandbox and printed into the
    seed), a FIFO (reading it would wait forever) or a missing table is a ConfigError naming the question."""
    folder = tables_dir(root)
    name = q.file_name
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise ConfigError(f"DA-Bench question {q.id}: file_name {name!r} is not a plain file name in {folder}")
    path = folder / name
    if not path.exists():
        raise ConfigError(f"DA-Bench question {q.id} reads {name}, which is not in {folder}")
    if not path.resolve().is_relative_to(folder.resolve()):
        raise ConfigError(f"DA-Bench question {q.id}: {path} is a link out of {folder} (to {path.resolve()})")
    if not path.is_file():
        raise ConfigError(f"DA-Bench question {q.id}: {path} is not a regular file (a FIFO, a folder or a device)")
    return path


@functools.lru_cache(maxsize=8)
def load_questions(root: Path) -> dict[int, Question]:
    """Every question of the folder with its label, by id (one without a label is left out: it cannot be scored).

    A row of the wrong shape is a ConfigError naming the file, the line and the field, not a traceback; a folder
    where no question has a label is one too (there is nothing to run)."""
    labels: dict[int, list[tuple[str, str]]] = {}
    for item in read_jsonl(root / LABELS):
        if isinstance(item, Exception):
            raise ConfigError(str(item))
        line, row = item
        try:
            qid = int(row["id"])
            labels[qid] = [(str(name), str(value)) for name, value in row["common_answers"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"{root / LABELS}:{line}: expected {{'id': <int>, 'common_answers': [[name, value], ...]}} "
                f"({type(exc).__name__}: {exc})"
            ) from None
    questions: dict[int, Question] = {}
    for item in read_jsonl(root / QUESTIONS):
        if isinstance(item, Exception):
            raise ConfigError(str(item))
        line, row = item
        try:
            qid = int(row["id"])
            if qid in labels:
                questions[qid] = Question.model_validate({**row, "common_answers": labels[qid]})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ConfigError(f"{root / QUESTIONS}:{line}: field {where!r}: {first['msg']}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"{root / QUESTIONS}:{line}: expected an integer 'id' ({type(exc).__name__}: {exc})"
            ) from None
    if not questions:
        raise ConfigError(f"DA-Bench data folder {root}: no question of {QUESTIONS} has a label in {LABELS}")
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
    "table_path",
    "tables_dir",
    "task_id_of",
]
