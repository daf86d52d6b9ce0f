"""Running an attribution method over a dataset: resumable, exactly once, every judge call recorded.

An output folder holds one run (one method, one prompt variant, one judge):

- ``records.jsonl``: the records evaluated (``failforge score`` reads them as the gold);
- ``predictions.jsonl``: one :class:`Prediction` per record;
- ``failed.jsonl``: sessions that hit an infrastructure error or a drift, with the error (their records
  stay in the scoring denominator, as wrong);
- ``calls.jsonl``: every live judge call as it happened (one line per call, written with fsync before
  the reply is used), keyed by session;
- ``ledger.sqlite``: the campaign ledger (:class:`failforge.campaign.Ledger`) with one attempt per
  (method, record), reconciled with the files on restart, so a killed run resumes where it stopped;
- ``manifest.json``: configuration, counts, tokens and time.

A session interrupted between calls is resumed by replaying its recorded calls (request hash checked)
and going live for the rest. ``recording=`` points a new run at an old run's ``calls.jsonl`` with no
live model at all: every call is served from the recording, which re-derives the predictions at zero
tokens, and a prompt that no longer matches raises ``PromptDrift`` rather than asking something new.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from failforge.attribution._judge import JudgeSession
from failforge.attribution._methods import DatasetFacts, MethodContext, method_key, methods
from failforge.attribution._predictions import Prediction
from failforge.attribution._prompts import PromptConfig
from failforge.attribution._record import LabelledFailure, load_records, write_records
from failforge.campaign._ledger import Ledger, attempt_ids_in, repair_jsonl
from failforge.canonical import canonical_hash
from failforge.errors import ConfigError, FailforgeError, SeedFormatError
from failforge.jsonl import read_json, read_jsonl
from failforge.llm import Responder
from failforge.trajectory import Step, append_jsonl

RECORDS, PREDICTIONS, FAILED, CALLS, LEDGER, MANIFEST = (
    "records.jsonl", "predictions.jsonl", "failed.jsonl", "calls.jsonl", "ledger.sqlite", "manifest.json")


class LikelihoodConfig(BaseModel):
    n_ctx: int = Field(default=4096, ge=512)
    max_step_tokens: int = Field(default=96, ge=8)
    max_target_tokens: int = Field(default=48, ge=4)
    n_threads: int | None = None


class AttributeConfig(BaseModel):
    method: str
    prompt: PromptConfig = Field(default_factory=PromptConfig)
    seed: int = 0
    judge_model: str | None = None
    judge_base_url: str | None = None
    max_tokens: int = Field(default=256, ge=8)
    concurrency: int = Field(default=1, ge=1)
    likelihood: LikelihoodConfig = Field(default_factory=LikelihoodConfig)

    def key(self, kind: str) -> str:
        return method_key(self.method, kind, self.prompt)  # type: ignore[arg-type]

    def identity(self, kind: str) -> dict[str, Any]:
        """What makes two runs the same run (concurrency and the endpoint's URL do not)."""
        out: dict[str, Any] = {"method": self.key(kind), "seed": self.seed}
        if kind == "judge":
            out.update(prompt=self.prompt.model_dump(), judge_model=self.judge_model, max_tokens=self.max_tokens)
        if kind == "likelihood":
            out.update(likelihood=self.likelihood.model_dump(exclude={"n_threads"}))
        return out


class Failure(BaseModel):
    attempt_id: str
    record_id: str
    method: str
    error: dict[str, Any]


class RunSummary(BaseModel):
    method: str
    planned: int = 0
    done_before: int = 0
    predicted: int = 0
    failed: int = 0
    calls: int = 0
    live_calls: int = 0
    replayed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    reconcile: dict[str, int] = Field(default_factory=dict)
    unread_lines: list[str] = Field(default_factory=list, description="lines of the recording that could not be read (skipped)")


class AttributionLedger(Ledger):
    """The campaign ledger, reconciled against this run's files instead of a campaign's."""

    def bind(self, config_hash: str, *, force: bool = False) -> None:
        row = self.db.execute("SELECT value FROM meta WHERE key='config_hash'").fetchone()
        if row and row[0] != config_hash and not force:
            raise ConfigError(f"{self.path.parent} holds a different attribution run (method, prompt, judge or seed differ); use a new output folder")
        super().bind(config_hash, force=True)

    def reconcile(self, output: Path, max_interrupted_tries: int) -> dict[str, int]:  # type: ignore[override]
        stats = {"settled_from_files": 0, "requeued": 0, "lost_results": 0, "given_up": 0, "torn_bytes": 0}
        in_files: dict[str, str] = {}
        for name, state in ((PREDICTIONS, "done"), (FAILED, "failed")):
            stats["torn_bytes"] += repair_jsonl(output / name)
            for attempt in attempt_ids_in(output / name):
                in_files.setdefault(attempt, state)
        rows = self.db.execute("SELECT attempt_id, state, tries FROM attempts").fetchall()
        with self.db:
            for attempt, state, tries in rows:
                file_state = in_files.get(attempt)
                if file_state and state != file_state:
                    self.db.execute("UPDATE attempts SET state=? WHERE attempt_id=?", (file_state, attempt))
                    stats["settled_from_files"] += 1
                elif not file_state and state in ("done", "failed", "rejected"):
                    self.db.execute("UPDATE attempts SET state='planned' WHERE attempt_id=?", (attempt,))
                    stats["lost_results"] += 1
                elif not file_state and state == "running":
                    if tries >= max_interrupted_tries:
                        self.db.execute("UPDATE attempts SET state='failed', error=? WHERE attempt_id=?",
                                        (f"interrupted {tries} times while running; given up", attempt))
                        stats["given_up"] += 1
                    else:
                        self.db.execute("UPDATE attempts SET state='planned' WHERE attempt_id=?", (attempt,))
                        stats["requeued"] += 1
        return stats


class RecordedCall(BaseModel):
    """One line of calls.jsonl: a judge call (the boundary's step, request and response) and its session."""

    session: str
    step: Step


class CallStore:
    """calls.jsonl: appended whole (one write + fsync) by any worker, under a lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def append(self, session: str, step: Step) -> None:
        with self._lock:
            append_jsonl(self.path, [RecordedCall(session=session, step=step)])

    @staticmethod
    def load(path: Path, unread: list[str] | None = None) -> dict[str, list[Step]]:
        """Recorded calls by session. A line that cannot be read is named in ``unread`` and skipped: the
        session it belonged to is then short of that call and goes live (or fails with --recording)."""
        out: dict[str, list[Step]] = {}
        problems = unread if unread is not None else []
        if not path.exists():
            return out
        repair_jsonl(path)
        for item in read_jsonl(path):
            if isinstance(item, SeedFormatError):
                problems.append(str(item))
                continue
            number, data = item
            try:
                call = RecordedCall.model_validate(data)
            except (ValueError, RecursionError) as exc:
                problems.append(f"{path}:{number}: not a recorded judge call: {' '.join(str(exc).split())[:200]}")
                continue
            out.setdefault(call.session, []).append(call.step)
        for steps in out.values():
            steps.sort(key=lambda s: s.index)
        return out


def attempt_id(key: str, record_id: str) -> str:
    return f"{key}::{record_id}"


def _records_file(output: Path, records: list[LabelledFailure]) -> None:
    path = output / RECORDS
    if path.exists():
        existing, _ = load_records(path)
        if [r.id for r in existing] != [r.id for r in records]:
            raise ConfigError(f"{output} holds a run on other records ({len(existing)} in {RECORDS}); use a new output folder")
        return
    write_records(path, records)


def run_attribution(
    records: list[LabelledFailure],
    config: AttributeConfig,
    output: Path,
    *,
    upstream: Responder | None = None,
    recording: Path | None = None,
    retry_failed: bool = False,
    on_progress: Callable[[str, RunSummary], None] | None = None,
) -> RunSummary:
    """Run ``config.method`` over ``records`` into ``output`` (see the module docstring)."""
    started = time.perf_counter()
    info = methods.info(config.method)
    method = info.obj()
    kind = method.kind
    key = config.key(kind)
    output.mkdir(parents=True, exist_ok=True)
    _records_file(output, records)
    if kind == "judge" and upstream is None and recording is None:
        raise ConfigError(f"{config.method} needs a judge model (or --recording to replay one)")
    summary = RunSummary(method=key)
    ledger = AttributionLedger(output / LEDGER)
    try:
        ledger.bind(canonical_hash({**config.identity(kind), "records": [r.id for r in records]}))
        by_attempt = {attempt_id(key, r.id): r for r in records}
        ledger.plan((a, r.id, 0, key, 0) for a, r in by_attempt.items())
        if retry_failed:
            _forget_failures(output, ledger)
        summary.reconcile = ledger.reconcile(output, max_interrupted_tries=2)
        pending = ledger.pending()
        summary.planned = len(by_attempt)
        summary.done_before = summary.planned - len(pending)
        recorded = CallStore.load((recording or output) / CALLS, summary.unread_lines) if kind == "judge" else {}
        store = CallStore(output / CALLS)
        facts = DatasetFacts.of(records)
        scorer = _scorer(config) if kind == "likelihood" else None
        workers = 1 if kind == "likelihood" else config.concurrency

        def run_one(attempt: str) -> Prediction:
            record = by_attempt[attempt]
            t0 = time.perf_counter()
            judge = None
            if kind == "judge":
                judge = JudgeSession(attempt, config.judge_model or "judge", upstream=None if recording else upstream,
                                     recorded=recorded.get(attempt, ()), on_call=None if recording else store.append,
                                     max_tokens=config.max_tokens, seed=config.seed)
            try:
                outcome = method.predict(MethodContext(record=record, prompt=config.prompt, seed=config.seed, judge=judge, dataset=facts, scorer=scorer))
            finally:
                if judge is not None:
                    judge.close()
            return Prediction(
                attempt_id=attempt, record_id=record.id, method=key, agent=outcome.agent, step=outcome.step, mode=outcome.mode,
                step_text=outcome.step_text, description=outcome.description, reply=outcome.reply,
                replies=list(judge.replies) if judge else [], problems=outcome.problems, step_scores=outcome.step_scores, ranking=outcome.ranking,
                audit=outcome.audit,
                calls=judge.calls if judge else 0, live_calls=judge.live_calls if judge else 0,
                prompt_tokens=judge.prompt_tokens if judge else 0, completion_tokens=judge.completion_tokens if judge else 0,
                seconds=round(time.perf_counter() - t0, 3),
            )

        for attempt, result in _execute(pending, run_one, workers, ledger):
            record = by_attempt[attempt]
            if isinstance(result, Prediction):
                append_jsonl(output / PREDICTIONS, [result])
                ledger.finish(attempt, "done")
                summary.predicted += 1
                summary.calls += result.calls
                summary.live_calls += result.live_calls
                summary.replayed_calls += result.calls - result.live_calls
                summary.prompt_tokens += result.prompt_tokens
                summary.completion_tokens += result.completion_tokens
            else:
                failure = Failure(attempt_id=attempt, record_id=record.id, method=key, error=_error(result))
                append_jsonl(output / FAILED, [failure])
                ledger.finish(attempt, "failed", failure.error["message"][:500])
                summary.failed += 1
            if on_progress is not None:
                on_progress(attempt, summary)
        if scorer is not None:
            scorer.close()
    finally:
        ledger.close()
    summary.seconds = round(time.perf_counter() - started, 3)
    _manifest(output, config, kind, summary, info, recording)
    return summary


def _forget_failures(output: Path, ledger: Ledger) -> None:
    """Plan failed sessions again: drop their lines from failed.jsonl (atomically) and mark them planned.

    Their recorded calls stay, so a session that failed after some calls replays those first.
    """
    path = output / FAILED
    if path.exists():
        repair_jsonl(path)
        tmp = path.with_suffix(".jsonl.tmp")
        tmp.write_text("", encoding="utf-8")
        tmp.replace(path)
    with ledger.db:
        ledger.db.execute("UPDATE attempts SET state='planned', tries=0, error=NULL WHERE state='failed'")


def _scorer(config: AttributeConfig) -> Any:
    from failforge.attribution._likelihood import TokenScorer

    lk = config.likelihood
    return TokenScorer(n_ctx=lk.n_ctx, n_threads=lk.n_threads, max_step_tokens=lk.max_step_tokens, max_target_tokens=lk.max_target_tokens)


def _error(exc: BaseException) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    to_dict = getattr(exc, "to_dict", None)
    if callable(to_dict):
        out.update(to_dict())
    return out


def _execute(pending: list[str], run_one: Callable[[str], Prediction], workers: int, ledger: Ledger) -> Iterator[tuple[str, Prediction | BaseException]]:
    """A bounded pool; the caller (the driver) alone writes files and the ledger."""
    if workers <= 1:
        for attempt in pending:
            ledger.mark_running(attempt)
            try:
                yield attempt, run_one(attempt)
            except FailforgeError as exc:
                yield attempt, exc
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="failforge-judge") as pool:
        queue = iter(pending)
        running: dict[Future[Prediction], str] = {}

        def top_up() -> None:
            while len(running) < workers:
                attempt = next(queue, None)
                if attempt is None:
                    return
                ledger.mark_running(attempt)
                running[pool.submit(run_one, attempt)] = attempt

        top_up()
        while running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                attempt = running.pop(future)
                try:
                    yield attempt, future.result()
                except FailforgeError as exc:
                    yield attempt, exc
            top_up()


def _manifest(output: Path, config: AttributeConfig, kind: str, summary: RunSummary, info: Any, recording: Path | None) -> None:
    from failforge import __version__

    path = output / MANIFEST
    previous = read_json(path) if path.exists() else {}
    runs = previous.get("runs", [])
    runs.append({**summary.model_dump(), "recording": str(recording) if recording else None})
    manifest = {
        "failforge_version": __version__,
        "method": summary.method,
        "kind": kind,
        "config": config.model_dump(),
        "identity_hash": canonical_hash(config.identity(kind)),
        "method_module": info.module,
        "runs": runs,
    }
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
