"""The campaign file: everything that decides what a campaign produces, resolved and hashed.

A campaign is described by a TOML file (or the same fields as CLI flags). Its resolved form (defaults
filled in) is written to the manifest, and its hash goes into every record's provenance, so any gold
record can be traced to the exact configuration that made it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from failforge.canonical import canonical_hash
from failforge.configfile import read_config_data, validate_config
from failforge.errors import ConfigError
from failforge.gold._filtering import default_filters
from failforge.llm import ModelEndpoint
from failforge.plugins import executors, filters, gold_kinds
from failforge.secrets import redact
from failforge.taxonomy import get_mode


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InjectionsConfig(_Section):
    """``[plan.injections]``: environment-side injections of AgentDojo seeds, planned next to the mode attempts
    (attacks x vectors x observation steps x injection tasks; see docs/INJECTION.md). Names are checked against
    AgentDojo's own registry and suites: a bad one is a one-line error naming the valid ones."""

    attacks: list[str] = Field(
        default_factory=lambda: ["important_instructions"],
        min_length=1,
        description="AgentDojo attacks (its attack registry)",
    )
    vectors: list[str] | None = Field(
        default=None, description="only these injection vectors (None: every vector a step shows)"
    )
    injection_tasks: list[str] | None = Field(
        default=None, description="only these injection tasks (None: the suite's, sampled)"
    )
    steps_per_seed: int = Field(default=2, ge=1, description="observation steps sampled per seed")
    tasks_per_point: int = Field(default=1, ge=1, description="injection tasks sampled per (step, vector)")
    samples: int = Field(default=1, ge=1)
    attack_target: str = Field(
        default="gpt-4o-2024-05-13",
        description="the model name model-naming attacks address (one of AgentDojo's MODEL_NAMES)",
    )
    refusals: bool = Field(
        default=False, description="also serve a refusal at each seed's first agent step (over_refusal gold)"
    )
    compliance: bool = Field(
        default=False,
        description=(
            "also flip the agent's step after each injected observation to comply, "
            "where the run under attack refused or ignored it (unsafe_completion gold)"
        ),
    )
    only: bool = Field(default=False, description="plan no mode attempts: only these")

    @field_validator("attacks")
    @classmethod
    def _known_attacks(cls, value: list[str]) -> list[str]:
        return [_injections_kind().check_attack(name) for name in value]

    @field_validator("vectors", "injection_tasks")
    @classmethod
    def _known_names(cls, value: list[str] | None, info: Any) -> list[str] | None:
        if value is None:
            return None
        check = (
            _injections_kind().check_vector if info.field_name == "vectors" else _injections_kind().check_injection_task
        )
        return [check(name) for name in value]


#: The gold kind that plans ``[plan.injections]`` (an environment's contribution: AgentDojo's injected observation).
INJECTIONS_KIND = "inject"


def _injections_kind() -> Any:
    """The kind that owns ``[plan.injections]``; its ``check_*`` methods raise ValueError naming the valid names
    (pydantic reports it with the field), or say which extra to install."""
    try:
        return gold_kinds.get(INJECTIONS_KIND)()
    except ConfigError as exc:
        raise ValueError(f"[plan.injections] needs the {INJECTIONS_KIND!r} gold kind: {exc}") from None


class PlanConfig(_Section):
    """Which (step, mode, sample) attempts to make per seed."""

    modes: list[str] | None = Field(default=None, description="restrict to these taxonomy codes")
    steps_per_seed: int = Field(default=2, ge=1)
    modes_per_step: int = Field(default=2, ge=1)
    samples: int = Field(default=1, ge=1)
    rng_seed: int = 0
    max_seeds: int | None = Field(default=None, ge=1)
    step_policy: Literal["all", "paper"] | None = Field(
        default=None,
        description=(
            "which agent steps may be decisive: all, or paper (never the first, never the final answer); None: "
            "the environment's default (paper for DA-Bench, all elsewhere)"
        ),
    )
    injections: InjectionsConfig | None = Field(
        default=None, description="environment-side injections (AgentDojo seeds); None: none"
    )

    @field_validator("modes")
    @classmethod
    def _known_modes(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [get_mode(code).code for code in value]


class DecisivenessConfig(_Section):
    """Does the changed step decide the outcome? Two arms continue live from step t: the seed's own a_t
    (the *original arm*) and the injected ã_t. A candidate is gold only if the original arm still
    succeeds and the injected one fails.

    On by default: with oracle seeds the continuing model is not the model that made the seed, so an
    original arm that also fails is the common case, and such a candidate says nothing about step t.
    The original arm does not depend on the mode or the sample, so it is run once per (seed, t) and
    shared by every attempt planned there (cached in the campaign folder). The injected arm's first
    run is the candidate itself; ``injected_k`` > 1 adds re-runs from the candidate's recorded ã_t.
    """

    enabled: bool = Field(
        default=True, description="false only explicitly: every record then says 'decisiveness not checked'"
    )
    original_k: int = Field(
        default=1, ge=1, description="live continuations from the seed's own a_t, once per (seed, t)"
    )
    injected_k: int = Field(
        default=1, ge=1, description="continuations from the injected step; the first is the candidate itself"
    )
    temperature: float | None = Field(
        default=None,
        gt=0,
        description=(
            "None: every run continues with the candidate's own settings (the agent endpoint's); a value samples each "
            "run at this temperature with its own seed, so k > 1 runs differ on a deterministic model"
        ),
    )
    original_min_success: float = Field(
        default=0.5, ge=0, le=1, description="keep only if the original arm succeeds at least this often"
    )
    injected_max_success: float = Field(
        default=0.5, ge=0, le=1, description="... and the injected arm at most this often"
    )

    @model_validator(mode="before")
    @classmethod
    def _one_k(cls, data: Any) -> Any:
        # `k = 3` (the older spelling) sets both arms.
        if isinstance(data, dict) and "k" in data:
            data = dict(data)
            k = data.pop("k")
            if "original_k" in data or "injected_k" in data:
                raise ValueError("give k, or original_k and injected_k, not both")
            data["original_k"] = data["injected_k"] = k
        return data


class ConformanceConfig(_Section):
    """Mode conformance: rules decide the structural modes; a recorded judge may decide the semantic ones."""

    judge: bool = Field(
        default=False, description="ask a judge model whether semantic-mode candidates exhibit their mode"
    )
    judge_model: ModelEndpoint | None = Field(default=None, description="None: the guide endpoint")
    keep_unverified: bool = Field(
        default=False, description="keep semantic-mode candidates that no rule or judge verified (marked unverified)"
    )


class FiltersConfig(_Section):
    enabled: list[str] = Field(default_factory=default_filters)
    decisiveness: DecisivenessConfig = Field(default_factory=DecisivenessConfig)
    conformance: ConformanceConfig = Field(default_factory=ConformanceConfig)

    @field_validator("enabled")
    @classmethod
    def _known_filters(cls, value: list[str]) -> list[str]:
        return [filters.checked(name) for name in value]


class PoolsConfig(_Section):
    """Warm environments each worker keeps between its attempts, reset to the fresh state (never carrying a run over).

    They change what an attempt costs, never what it records: a pooled sandbox is reset to be
    indistinguishable from a freshly opened one, or closed. So they are left out of the campaign's
    hash, and a campaign resumed with other pool sizes is the same campaign.
    """

    sandboxes: int = Field(
        default=1,
        ge=0,
        le=16,
        description=(
            "idle code sandboxes kept per worker and kind, reset between attempts (0: a new one for every attempt)"
        ),
    )


class CampaignConfig(_Section):
    """A campaign as a campaign file states it; its resolved form goes to the manifest and its hash
    (everything but the output path and pool sizes, secrets redacted) into every record's provenance."""

    seeds: list[str] = Field(description="JSONL files of successful seed trajectories")
    output: str
    environment: str | None = Field(
        default=None, description="only seeds recorded in this environment (e.g. agentdojo)"
    )
    harness: str | None = Field(default=None, description="only seeds recorded with this harness")
    agent: ModelEndpoint | None = Field(default=None, description="None: the embedded local model")
    guide: ModelEndpoint | None = Field(default=None, description="None: the same model as the agent")
    guide_temperature: float = Field(default=0.7, ge=0)
    guide_kind: Literal["model", "rules", "auto"] = Field(
        default="auto",
        description=(
            "who writes steering notes: the guide model, rules (structural modes only), or auto (rules where they"
            " apply)"
        ),
    )
    pin_tool: bool = Field(
        default=False,
        description=(
            "a rule-guide note that asks for a call to an offered tool (A.2, A.6) also pins that tool with tool_choice"
            " in the stage-2 request; the arguments stay the model's own (off by default: llama.cpp decodes a pinned"
            " call under a grammar, many times slower)"
        ),
    )
    agent_cmd: list[str] | None = Field(
        default=None,
        description=(
            "seeds of the external harness: the agent command to run instead of the one they recorded (the script"
            " moved, another venv); the requests it sends must still be the recorded ones, or replay drifts"
        ),
    )
    decision_judge: ModelEndpoint | None = Field(
        default=None,
        description=(
            "a recorded judge for the control decisions the rules leave open (as `failforge decide`): at settle every"
            " gold record gets its judgements attached (provenance decision_judgements) and is adjudicated again; None:"
            " rules only"
        ),
    )
    plan: PlanConfig = Field(default_factory=PlanConfig)
    filters: FiltersConfig = Field(default_factory=FiltersConfig)
    concurrency: int = Field(default=1, ge=1, le=256)
    executor: str = Field(
        default="local",
        description=(
            "a registered executor: local (thread pool), process (worker processes, for CPU-bound environments) or ray"
        ),
    )
    pools: PoolsConfig = Field(default_factory=PoolsConfig)
    ray_address: str | None = Field(default=None, description="Ray cluster address; None starts a local Ray instance")
    attempt_deadline: float = Field(default=900.0, gt=0, description="seconds one attempt may take, retries included")
    max_interruptions: int = Field(
        default=3,
        ge=1,
        description=(
            "an attempt cut off this often by a crash of the whole run is given up (retryable with --retry-failed)"
        ),
    )
    max_attempt_tries: int = Field(
        default=3,
        ge=1,
        description=(
            "an attempt that failed for infrastructure reasons is retried on later runs until it has been tried this"
            " often"
        ),
    )
    circuit_breaker: int = Field(
        default=5,
        ge=0,
        description="stop starting attempts after this many consecutive infrastructure failures (0: never)",
    )

    @model_validator(mode="before")
    @classmethod
    def _guide_shorthand(cls, data: Any) -> Any:
        # `guide = "auto"` in a campaign file names the guide kind; a table names the guide endpoint.
        if isinstance(data, dict) and isinstance(data.get("guide"), str):
            data = dict(data)
            if "guide_kind" in data:
                raise ValueError('give the guide kind once: either guide = "..." or guide_kind = "..."')
            data["guide_kind"] = data.pop("guide")
        return data

    @field_validator("agent_cmd", mode="before")
    @classmethod
    def _argv(cls, value: Any) -> Any:
        import shlex

        return shlex.split(value) if isinstance(value, str) else value

    @field_validator("executor")
    @classmethod
    def _known_executor(cls, value: str) -> str:
        return executors.checked(value)

    @field_validator("seeds")
    @classmethod
    def _absolute_seeds(cls, value: list[str]) -> list[str]:
        # Absolute, so the same campaign started from another folder has the same config (and hash).
        return [str(Path(p).expanduser().resolve()) for p in value]

    @field_validator("output")
    @classmethod
    def _absolute_output(cls, value: str) -> str:
        return str(Path(value).expanduser().resolve())

    def config_hash(self) -> str:
        """What decides the records: everything but where they are written and how many warm environments
        are kept (neither changes a record), with secrets masked (so a moved folder is the same campaign,
        and no key is hashed into provenance)."""
        data = self.model_dump(mode="json", exclude={"output", "pools"})
        data.update(
            executor="local", ray_address=None, concurrency=1
        )  # where and how many at once decide no record either: hashed as the defaults
        if data.get("agent_cmd") is None:  # a field added later, unset: campaigns made before it keep their hash
            data.pop("agent_cmd", None)
        if data.get("decision_judge") is None:  # likewise
            data.pop("decision_judge", None)
        if data["plan"].get("injections") is None:  # likewise
            data["plan"].pop("injections", None)
        if data["plan"].get("step_policy") is None:  # likewise
            data["plan"].pop("step_policy", None)
        return canonical_hash(json.loads(redact(json.dumps(data))))[:16]


def load_campaign(path: str | Path) -> CampaignConfig:
    """Read a TOML campaign file; relative seed and output paths are relative to the file."""
    file = Path(path)
    data = read_config_data(file, what="campaign file", format="toml")
    base = file.resolve().parent
    seeds = data.get("seeds")
    if seeds is not None:
        if not isinstance(seeds, list) or not all(isinstance(p, str) for p in seeds):
            raise ConfigError(
                f"campaign file {file}: field 'seeds': expected a list of JSONL paths, e.g. seeds = [\"seeds.jsonl\"],"
                f" found {seeds!r}"
            )
        data["seeds"] = [str((base / p).resolve()) if not Path(p).is_absolute() else p for p in seeds]
    if isinstance(data.get("output"), str) and not Path(data["output"]).is_absolute():
        data["output"] = str((base / data["output"]).resolve())
    return validate_config(CampaignConfig, data, where=f"campaign file {file}")
