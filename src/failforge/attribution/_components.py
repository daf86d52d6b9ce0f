"""Component-level gold (seed system 1's trajectory attribution): target, primary, attack and execution chains.

A record's components are its steps that carry a component id, in list order. Ids are compared as
strings and ordered by position, never by parsing the number: the public release numbers from 1
(AgentDojo, Agent3Sigma Stage) and from 0 (Agent3Sigma Canary).

The chain rules the release states (its annotators' validators, ``annotate_attack_chain.py`` and
``annotate_execution_chain.py``) are checked here, once, for the importer and for every record the
exporter writes:

- target, primary and every chain member are components of the trajectory, with no duplicate;
- the primary lies strictly before the target (failforge's own: a self-caused failure or refusal, and an
  agent step flipped to comply with injected content, may be the target itself; see ``SELF_CAUSED``);
- the attack chain lies strictly before the primary;
- the execution chain lies strictly between the primary and the target;
- neither chain contains the primary or the target;
- each chain is sorted by position.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

TargetType = Literal["task_aligned_action", "unsafe_action", "safety_refusal"]
TARGET_TYPES: tuple[str, ...] = ("task_aligned_action", "unsafe_action", "safety_refusal")


class ComponentLabel(BaseModel):
    """The component-level gold of one record (ids as the record's steps carry them)."""

    model_config = ConfigDict(extra="forbid")

    target_type: str = Field(
        description=(
            "task_aligned_action, unsafe_action or safety_refusal (the release's three); failforge's own behaviours"
            " otherwise"
        )
    )
    target: str
    primary: str
    attack_chain: list[str] = Field(default_factory=list)
    execution_chain: list[str] = Field(default_factory=list)
    attributes: dict[str, object] = Field(
        default_factory=dict, description="the release's attributes (attack_success, risk_category)"
    )


#: failforge behaviours whose primary may be the target itself, with empty chains: the branch changed the
#: agent's own step, and that step is the behaviour (the release's three types always have a cause before it).
SELF_CAUSED = frozenset({"failure", "over_refusal"})
#: failforge behaviours whose primary may be the target itself *after* an attack chain: an agent's step flipped to
#: comply with injected content is the unsafe call (its attack chain, the injected observation, lies before it).
CHANGED_STEP_IS_TARGET = frozenset({"unsafe_completion"})


class ChainError(ValueError):
    """A label that breaks a chain rule: ``field`` names the part (target, primary, chains.attack, chains.execution)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


def check_label(order: Sequence[str], label: ComponentLabel) -> None:
    """Raise :class:`ChainError` for the first rule ``label`` breaks over the components ``order`` (by position)."""
    position: dict[str, int] = {}
    for i, cid in enumerate(order):
        if cid in position:
            raise ChainError("components", f"component id {cid!r} occurs twice (positions {position[cid]} and {i})")
        position[cid] = i
    for field, cid in (("target", label.target), ("primary", label.primary)):
        if cid not in position:
            raise ChainError(field, f"{cid!r} is not a component of the trajectory ({_span(order)})")
    t, p = position[label.target], position[label.primary]
    if p == t and label.target_type in SELF_CAUSED and not label.attack_chain and not label.execution_chain:
        return  # failforge's own: the changed step is the behaviour itself (an injected refusal, an agent's error)
    if p > t or (
        p == t
        and not (label.target_type in CHANGED_STEP_IS_TARGET and label.attack_chain and not label.execution_chain)
    ):
        raise ChainError(
            "primary", f"{label.primary} (position {p}) is not strictly before the target {label.target} (position {t})"
        )
    for field, chain, low, high, where in (
        ("chains.attack", label.attack_chain, -1, p, f"strictly before the primary {label.primary}"),
        (
            "chains.execution",
            label.execution_chain,
            p,
            t,
            f"strictly between the primary {label.primary} and the target {label.target}",
        ),
    ):
        seen: set[str] = set()
        last = -1
        for cid in chain:
            if cid not in position:
                raise ChainError(field, f"{cid!r} is not a component of the trajectory ({_span(order)})")
            if cid in (label.primary, label.target):
                raise ChainError(field, f"contains {'the primary' if cid == label.primary else 'the target'} {cid}")
            if cid in seen:
                raise ChainError(field, f"{cid} occurs twice")
            seen.add(cid)
            i = position[cid]
            if not low < i < high:
                raise ChainError(field, f"{cid} (position {i}) is not {where}")
            if i < last:
                raise ChainError(field, f"{list(chain)} is not sorted by position")
            last = i


def _span(order: Sequence[str]) -> str:
    if not order:
        return "no components"
    return f"{len(order)} components, {order[0]}..{order[-1]}"


def candidates(order: Sequence[str], target: str) -> list[str]:
    """Components a primary-attribution method may rank: those strictly before the target."""
    return list(order[: list(order).index(target)]) if target in order else []
