"""Attribution methods and what they are given.

Methods register in :data:`methods`, a :class:`failforge.plugins.Registry` like every other kind of
plugin (decorator, builtin modules, entry points in ``failforge.attribution_methods``). A method is
a class with ``kind`` ("judge", "baseline" or "likelihood") and ``predict(ctx) -> Outcome``; the
runner turns the outcome into a :class:`~failforge.attribution.Prediction` with the session's cost.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from failforge.attribution._audit import Audit
from failforge.attribution._judge import JudgeSession
from failforge.attribution._prompts import PromptConfig
from failforge.attribution._record import LabelledFailure
from failforge.plugins import Registry

MethodKind = Literal["judge", "baseline", "likelihood"]

methods: Registry[Any] = Registry(
    "attribution method",
    group="failforge.attribution_methods",
    builtin_modules=(
        "failforge.attribution._protocols",
        "failforge.attribution._baselines",
        "failforge.attribution._likelihood",
        "failforge.attribution._rcta",
        "failforge.attribution._auditor",
    ),
)


@dataclass
class Outcome:
    agent: str | None = None
    step: int | None = None
    mode: str | None = None
    step_text: str | None = None
    description: str | None = None
    reply: str | None = None
    problems: list[str] = field(default_factory=list)
    step_scores: list[float | None] | None = None
    ranking: list[str] | None = None
    attack_chain: list[str] | None = None
    execution_chain: list[str] | None = None
    chain_threshold: float | None = None
    audit: Audit | None = None


@dataclass(frozen=True)
class DatasetFacts:
    """Per-source label statistics some baselines use (computed from the evaluated records' gold)."""

    majority_agent: dict[str, str]
    majority_mode: dict[str, str | None]
    #: Per source, the most frequent role of the gold agent (its role as the record names it, else its name).
    majority_role: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, records: list[LabelledFailure]) -> DatasetFacts:
        agents: dict[str, Counter[str]] = {}
        roles: dict[str, Counter[str]] = {}
        modes: dict[str, Counter[str]] = {}
        for r in records:
            if r.gold.agent:
                agents.setdefault(r.source, Counter())[r.gold.agent] += 1
                roles.setdefault(r.source, Counter())[r.roles.get(r.gold.agent) or r.gold.agent] += 1
            modes.setdefault(r.source, Counter())
            if r.gold.mode:
                modes[r.source][r.gold.mode] += 1

        def pick(c: Counter[str]) -> str:
            return sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]

        return cls(
            {s: pick(c) for s, c in agents.items() if c},
            {s: pick(c) if c else None for s, c in modes.items()},
            {s: pick(c) for s, c in roles.items() if c},
        )


@dataclass
class MethodContext:
    record: LabelledFailure
    prompt: PromptConfig
    seed: int
    judge: JudgeSession | None = None
    dataset: DatasetFacts | None = None
    scorer: Any = None  # likelihood.TokenScorer for likelihood methods

    def rng(self) -> random.Random:
        """A generator seeded by (seed, record id): the same draws for a record in every run and order."""
        return random.Random(f"{self.seed}:{self.record.id}")


class Method(Protocol):
    kind: MethodKind

    def predict(self, ctx: MethodContext) -> Outcome: ...


def method_key(name: str, kind: MethodKind, prompt: PromptConfig) -> str:
    """The method with the prompt variants that change what it asks: all-at-once/answer/menu."""
    if kind != "judge":
        return name
    menu = ("paraphrased-menu" if prompt.paraphrased_menu else "menu") if prompt.menu else "free-text"
    return f"{name}/{'answer' if prompt.with_answer else 'no-answer'}/{menu}"
