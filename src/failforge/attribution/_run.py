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
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from failforge.attribution._calls import CallStore, RecordedCall
from failforge.attribution._dispatch import Executor, Job, SessionEnv, Worker, dispatch, wait_for_old_workers
from failforge.attribution._methods import DatasetFacts, method_key, methods
from failforge.attribution._predictions import Prediction
from failforge.attribution._prompts import PromptConfig
from failforge.attribution._record import LabelledFailure, load_records, write_records
from failforge.canonical import canonical_hash
from failforge.errors import ConfigError
from failforge.jobs import FolderLock, Ledger, attempt_ids_in, repair_jsonl
from failforge.jsonl import read_json
from failforge.llm import (
    Mechanism,
    ModelEndpoint,
    Responder,
    StructuredSupport,
    mechanism_of_requests,
    probe_structured,
)
from failforge.secrets import redact_known, safe_url
from failforge.trajectory import append_jsonl

__all__ = ["AttributeConfig", "CallStore", "LikelihoodConfig", "RecordedCall", "RunSummary", "run_attribution"]

RECORDS, PREDICTIONS, FAILED, CALLS, LEDGER, MANIFEST = (
    "records.jsonl",
    "predictions.jsonl",
    "failed.jsonl",
    "calls.jsonl",
    "ledger.sqlite",
    "manifest.json",
)


class LikelihoodConfig(BaseModel):
    n_ctx: int = Field(default=4096, ge=512)
    max_step_tokens: int = Field(default=96, ge=8)
    max_target_tokens: int = Field(default=48, ge=4)
    n_threads: int | None = None


class AttributeConfig(BaseModel):
    method: str
    structured_output: Literal["auto", "off"] = Field(
        default="auto",
        description="ask for schema-constrained answers where the judge endpoint supports it (probed once), or never",
    )
    prompt: PromptConfig = Field(default_factory=PromptConfig)
    seed: int = 0
    judge_model: str | None = None
    judge_base_url: str | None = None
    max_tokens: int = Field(default=256, ge=8)
    concurrency: int = Field(default=1, ge=1, description="sessions in flight (threads, worker processes or Ray tasks)")
    executor: Executor = Field(
        default="thread", description="where sessions run: thread (in the driver), process or ray"
    )
    ray_address: str | None = None
    likelihood: LikelihoodConfig = Field(default_factory=LikelihoodConfig)

    def key(self, kind: str) -> str:
        return method_key(self.method, kind, self.prompt)  # type: ignore[arg-type]

    def identity(self, kind: str) -> dict[str, Any]:
        """What makes two runs the same run (concurrency, the executor and the endpoint's URL do not: a run
        started with threads resumes with processes)."""
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
    unread_lines: list[str] = Field(
        default_factory=list, description="lines of the recording that could not be read (skipped)"
    )


class AttributionLedger(Ledger):
    """The campaign ledger, reconciled against this run's files instead of a campaign's."""

    def bind(self, config_hash: str, *, force: bool = False) -> None:
        row = self.db.execute("SELECT value FROM meta WHERE key='config_hash'").fetchone()
        if row and row[0] != config_hash and not force:
            raise ConfigError(
                f"{self.path.parent} holds a different attribution run (method, prompt, judge or seed differ); use a"
                " new output folder"
            )
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
                        message = f"interrupted {tries} times while running; given up (--retry-failed runs it again)"
                        # The line first, as every failure: failed.jsonl names every given-up session with its reason,
                        # and the next reconcile reads it as failed instead of requeueing a 'failed' row it cannot find.
                        key, _, record_id = attempt.partition("::")
                        append_jsonl(
                            output / FAILED,
                            [
                                Failure(
                                    attempt_id=attempt,
                                    record_id=record_id,
                                    method=key,
                                    error={"type": "Interrupted", "message": message},
                                )
                            ],
                        )
                        self.db.execute(
                            "UPDATE attempts SET state='failed', error=? WHERE attempt_id=?", (message, attempt)
                        )
                        stats["given_up"] += 1
                    else:
                        self.db.execute("UPDATE attempts SET state='planned' WHERE attempt_id=?", (attempt,))
                        stats["requeued"] += 1
        return stats


def attempt_id(key: str, record_id: str) -> str:
    return f"{key}::{record_id}"


def _records_file(output: Path, records: list[LabelledFailure]) -> None:
    path = output / RECORDS
    if path.exists():
        existing, _ = load_records(path)
        if [r.id for r in existing] != [r.id for r in records]:
            raise ConfigError(
                f"{output} holds a run on other records ({len(existing)} in {RECORDS}); use a new output folder"
            )
        return
    write_records(path, records)


def run_attribution(
    records: list[LabelledFailure],
    config: AttributeConfig,
    output: Path,
    *,
    upstream: Responder | None = None,
    endpoint: ModelEndpoint | None = None,
    recording: Path | None = None,
    retry_failed: bool = False,
    on_progress: Callable[[str, RunSummary], None] | None = None,
    provenance: dict[str, Any] | None = None,
) -> RunSummary:
    """Run ``config.method`` over ``records`` into ``output`` (see the module docstring).

    The judge: ``upstream`` (an open client, for the thread executor) and/or ``endpoint`` (what worker
    processes and Ray tasks open their own client to; a thread run opens it when ``upstream`` is not given).
    ``provenance``: where the run's configuration came from (a methods config, secrets removed), kept in the manifest.
    """
    started = time.perf_counter()
    info = methods.info(config.method)
    kind = info.obj.kind
    key = config.key(kind)
    if kind == "likelihood" and config.executor != "thread":
        raise ConfigError(f"{config.method} scores with a model loaded in this process; run it with --executor thread")
    output.mkdir(parents=True, exist_ok=True)
    live = kind == "judge" and recording is None
    if live and upstream is None and endpoint is None:
        raise ConfigError(f"{config.method} needs a judge model (or --recording to replay one)")
    summary = RunSummary(method=key)
    with FolderLock(output):
        wait_for_old_workers(output)  # a killed driver's workers may still be finishing a call: never replay under them
        _records_file(output, records)
        own_upstream = upstream is None and live and config.executor == "thread"
        if own_upstream and endpoint is not None:
            upstream = endpoint.upstream()
        ledger = AttributionLedger(output / LEDGER)
        worker: Worker | None = None
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
            support = _structured(config, kind, live, upstream, endpoint, recorded)
            env = SessionEnv(
                method=config.method,
                key=key,
                prompt=config.prompt,
                seed=config.seed,
                judge_model=config.judge_model or "judge",
                max_tokens=config.max_tokens,
                facts=DatasetFacts.of(records),
                calls=output / CALLS if live else None,
                endpoint=endpoint if live else None,
                structured=support.mechanism if support else "none",
            )
            worker = Worker(
                env, upstream=upstream if live else None, scorer=_scorer(config) if kind == "likelihood" else None
            )
            jobs: list[Job] = [(a, by_attempt[a], recorded.get(a, [])) for a in pending]
            workers = 1 if kind == "likelihood" else config.concurrency
            results = dispatch(
                config.executor, jobs, worker, workers, ledger.mark_running, ray_address=config.ray_address
            )
            try:
                for attempt, result in results:
                    _settle(output, ledger, summary, by_attempt[attempt], attempt, key, result)
                    if on_progress is not None:
                        on_progress(attempt, summary)
            finally:
                results.close()
        finally:
            if worker is not None and worker.scorer is not None:
                worker.scorer.close()
            if own_upstream and worker is not None:
                worker.close()
            ledger.close()
        summary.seconds = round(time.perf_counter() - started, 3)
        _manifest(output, config, kind, summary, info, recording, provenance, support)
    return summary


def _structured(
    config: AttributeConfig,
    kind: str,
    live: bool,
    upstream: Responder | None,
    endpoint: ModelEndpoint | None,
    recorded: dict[str, list[Any]],
) -> StructuredSupport | None:
    """How this run asks for structured answers: as its recording did (a replay asks exactly the recorded
    requests); else as the judge endpoint honours (probed once per endpoint and model); never when off."""
    if kind != "judge":
        return None
    requests = (s.model_call.request for steps in recorded.values() for s in steps if s.model_call is not None)
    used: Mechanism | None = mechanism_of_requests(requests)
    if used is not None or not live or config.structured_output == "off":
        source = "the recorded calls" if used is not None or not live else "structured_output=off"
        return StructuredSupport(
            mechanism=used or "none", endpoint=config.judge_model or "judge", detail=f"from {source}"
        )
    if upstream is None and endpoint is not None:  # process/Ray workers open their own clients: probe with one of ours
        probe = endpoint.upstream()
        try:
            return probe_structured(probe, config.judge_model or endpoint.model)
        finally:
            probe.close()
    assert upstream is not None
    return probe_structured(upstream, config.judge_model or "judge")


def _settle(
    output: Path,
    ledger: Ledger,
    summary: RunSummary,
    record: LabelledFailure,
    attempt: str,
    key: str,
    result: Prediction | dict[str, Any],
) -> None:
    """The driver's one write per session: its line (fsync), then the ledger, then the counts."""
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
        failure = Failure(attempt_id=attempt, record_id=record.id, method=key, error=result)
        append_jsonl(output / FAILED, [failure])
        ledger.finish(attempt, "failed", str(result.get("message", ""))[:500])
        summary.failed += 1


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
    return TokenScorer(
        n_ctx=lk.n_ctx,
        n_threads=lk.n_threads,
        max_step_tokens=lk.max_step_tokens,
        max_target_tokens=lk.max_target_tokens,
    )


def _manifest(
    output: Path,
    config: AttributeConfig,
    kind: str,
    summary: RunSummary,
    info: Any,
    recording: Path | None,
    provenance: dict[str, Any] | None = None,
    structured: StructuredSupport | None = None,
) -> None:
    from failforge import __version__

    path = output / MANIFEST
    previous = read_json(path) if path.exists() else {}
    runs = previous.get("runs", [])
    runs.append(
        {
            **summary.model_dump(),
            "recording": str(recording) if recording else None,
            "executor": config.executor,
            "workers": config.concurrency,
        }
    )
    dumped = config.model_dump()
    if dumped.get("judge_base_url"):
        # credentials in a URL (userinfo, a key in the query) never reach the manifest
        dumped["judge_base_url"] = safe_url(dumped["judge_base_url"])
    manifest = {
        "failforge_version": __version__,
        "method": summary.method,
        "kind": kind,
        "config": dumped,
        "judge": {"model": config.judge_model, "base_url": dumped.get("judge_base_url")} if kind == "judge" else None,
        "identity_hash": canonical_hash(config.identity(kind)),
        "method_module": info.module,
        "runs": runs,
    }
    if kind == "likelihood":
        from failforge.llm import local_model_path

        manifest["likelihood_model"] = file_identity(local_model_path())
    if provenance is not None:
        manifest["provenance"] = provenance
    if structured is not None:
        manifest["structured_output"] = structured.model_dump()
    # through the redactor, as every output: a run's errors may quote what an upstream echoed
    path.write_text(redact_known(json.dumps(manifest, indent=2)) + "\n", encoding="utf-8")


def file_identity(path: Path) -> dict[str, Any]:
    """Name, size and SHA-256 of a model file: the likelihood scores depend on the exact weights (another
    quantisation of the same model gives other scores), so a manifest names the file they came from."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return {"file": path.name, "bytes": path.stat().st_size, "sha256": digest.hexdigest()}
