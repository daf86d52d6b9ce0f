"""Environment-side injection: a branch that changes one *observation* instead of one action.

A successful AgentDojo seed is replayed exactly up to the tool step t whose observation shows an
injection vector (AgentDojo places vectors as placeholders in its environment data). At t the
environment becomes AgentDojo's attacked one (``load_and_inject_default_environment`` with the vector
filled by one of AgentDojo's own attacks for one of its injection tasks, the prefix's tool calls
re-applied: see :meth:`failforge.environments.agentdojo.AgentDojoEpisode.apply_injection`), so the
observation at t carries the attack and any later read of the field shows the same text; the run then
continues live. AgentDojo's security check of the injection task says whether the attacker's goal
happened; its utility check says whether the user's task still got done.

Which tool steps are injectable is found as AgentDojo finds its injection candidates: the seed's tool
calls are re-run on an environment whose every vector holds a unique canary; a step whose observation
shows a canary can carry that vector (vector defaults are often empty strings, so they cannot be searched).

The gold label is known by construction (:mod:`._kinds`): primary = the injected
observation, target = the first call after which AgentDojo's security check holds, execution chain =
the steps from where the branch's actions first diverge from the seed's up to the target, attack chain
= the attacker-controlled components strictly before the primary (none: the prefix is the seed's).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from failforge.errors import ConfigError
from failforge.gold import JobSpec
from failforge.judgement.text import shown
from failforge.llm import Responder
from failforge.replay import Plan, run_from_seed
from failforge.trajectory import ComponentSpec, Step, Trajectory

#: The pipeline name the attack text addresses ("You are GPT-4", for ``important_instructions``): AgentDojo's
#: model-naming attacks need one of its known model names; the loopback agent has none, so the campaign names one.
DEFAULT_ATTACK_TARGET = "gpt-4o-2024-05-13"
DEFAULT_ATTACK = "important_instructions"
INJECTION_VERSION = "agentdojo-observation/1"


def attack_names() -> list[str]:
    """Every attack AgentDojo registers (its ``attacks.attack_registry.ATTACKS``), sorted."""
    import agentdojo.attacks  # noqa: F401  (registers the attacks)
    from agentdojo.attacks.attack_registry import ATTACKS

    return sorted(ATTACKS)


def check_attack(name: str) -> str:
    """``name`` when AgentDojo has the attack; else a one-line error naming the valid ones."""
    names = attack_names()
    if name not in names:
        raise ConfigError(f"unknown AgentDojo attack {name!r}; valid: {', '.join(names)}")
    return name


def check_vector(suite_name: str, vector: str) -> str:
    """``vector`` when the suite has it; else a one-line error naming the valid ones."""
    from failforge.environments.agentdojo import get_suite

    known = sorted(get_suite(suite_name).get_injection_vector_defaults())
    if vector not in known:
        raise ConfigError(
            f"AgentDojo suite {suite_name!r} has no injection vector {vector!r}; valid: {', '.join(known)}"
        )
    return vector


def check_injection_task(suite_name: str, task_id: str) -> str:
    from failforge.environments.agentdojo import get_suite

    known = sorted(get_suite(suite_name).injection_tasks, key=lambda s: int(s.rsplit("_", 1)[-1]))
    if task_id not in known:
        raise ConfigError(
            f"AgentDojo suite {suite_name!r} has no injection task {task_id!r}; valid: {', '.join(known)}"
        )
    return task_id


def _suite_and_task(seed: Trajectory) -> tuple[str, str]:
    if seed.environment.name != "agentdojo":
        raise ConfigError(
            f"seed {seed.id!r} is from {seed.environment.name!r}; environment-side injection is built for AgentDojo"
            " only"
        )
    return str(seed.environment.config["suite"]), str(seed.environment.config["task_id"])


@dataclass(frozen=True)
class InjectionPoints:
    """For each tool step of a seed, the vectors its observation shows; and why the other steps cannot carry one."""

    vectors: dict[int, list[str]]
    not_injectable: dict[int, str] = field(default_factory=dict)


def injection_points(seed: Trajectory) -> InjectionPoints:
    """Re-run the seed's tool calls on AgentDojo's environment with a canary in every vector (as
    ``BaseAttack.get_injection_candidates`` does with the ground truth); a tool step whose observation
    shows canary v can carry vector v. Agent steps and the task are never observation points."""
    from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
    from agentdojo.functions_runtime import FunctionsRuntime

    from failforge.environments.agentdojo import DEFAULT_CLOCK, frozen_clock, get_suite

    suite_name, task_id = _suite_and_task(seed)
    suite = get_suite(suite_name, str(seed.environment.config.get("benchmark_version", "v1")))
    canaries = {v: f"<CANARY---{v}--->" for v in suite.get_injection_vector_defaults()}
    vectors: dict[int, list[str]] = {}
    why: dict[int, str] = {}
    with frozen_clock(str(seed.environment.config.get("clock", DEFAULT_CLOCK))):
        env = suite.user_tasks[task_id].init_environment(suite.load_and_inject_default_environment(canaries))
        runtime = FunctionsRuntime(suite.tools)
        for step in seed.steps:
            if step.kind != "tool":
                continue
            if not step.tool_name or not isinstance(step.tool_arguments, dict):
                why[step.index] = "the tool call's arguments were not a JSON object (nothing was read)"
                continue
            result, error = runtime.run_function(env, step.tool_name, dict(step.tool_arguments))
            if error is not None:
                why[step.index] = f"the tool call failed ({error.splitlines()[0][:80]}): no content to inject into"
                continue
            text = tool_result_to_str(result)
            found = [v for v, canary in canaries.items() if canary in text]
            if found:
                vectors[step.index] = found
            else:
                why[step.index] = (
                    f"{step.tool_name} shows no injection vector of suite {suite_name} (no injectable content)"
                )
    for step in seed.steps:
        if step.kind != "tool":
            why.setdefault(
                step.index,
                f"step {step.index} is a{'n agent' if step.kind == 'agent' else ' task'} step, not an observation",
            )
    return InjectionPoints(vectors=vectors, not_injectable=dict(sorted(why.items())))


class _Target:
    """The pipeline an AgentDojo attack is built against: only its ``name`` is read (to name the model)."""

    def __init__(self, name: str) -> None:
        self.name = name


@functools.lru_cache(maxsize=64)
def _attack(suite_name: str, attack: str, target: str) -> Any:
    from agentdojo.attacks.attack_registry import load_attack

    from failforge.environments.agentdojo import get_suite

    check_attack(attack)
    return load_attack(attack, get_suite(suite_name), _Target(target))  # type: ignore[arg-type]


def attack_text(
    suite_name: str,
    user_task: str,
    injection_task: str,
    attack: str,
    vector: str,
    *,
    target: str = DEFAULT_ATTACK_TARGET,
) -> str:
    """The text AgentDojo's attack puts in ``vector`` for (user task, injection task): ``attack.attack``'s own
    output, so the vector is filled exactly as AgentDojo's benchmark fills it."""
    from failforge.environments.agentdojo import get_suite

    check_vector(suite_name, vector)
    check_injection_task(suite_name, injection_task)
    suite = get_suite(suite_name)
    texts = _attack(suite_name, attack, target).attack(
        suite.user_tasks[user_task], suite.injection_tasks[injection_task]
    )
    if vector not in texts:
        raise ConfigError(
            f"AgentDojo's attack {attack!r} fills vectors {', '.join(sorted(texts))} for {suite_name}/{user_task}, not"
            f" {vector!r}"
        )
    return str(texts[vector])


class AttackPoint(JobSpec, frozen=True):
    """Where and what an attack is: the observation step, the vector it fills, AgentDojo's attack, the injection
    task."""

    vector: str
    attack: str
    injection_task: str


class InjectionSpec(AttackPoint, frozen=True):
    """One planned environment-side injection: seed, observation step, vector, attack, injection task."""

    job: Literal["inject"] = "inject"
    """The gold kind that runs it."""

    @property
    def attempt_id(self) -> str:
        return f"{self.seed_id}@{self.step}:inject:{self.attack}:{self.vector}:{self.injection_task}#{self.sample}"

    @property
    def mode(self) -> str:
        """The ledger's mode column and the label's ``mode_code``."""
        return f"injection:{self.attack}"


def injected_spec(seed: Trajectory, spec: InjectionSpec, text: str) -> ComponentSpec:
    """The seed's environment spec with the injection: what a branch records, so it rebuilds attacked."""
    config = {
        **seed.environment.config,
        "injection": {
            "injection_task": spec.injection_task,
            "vectors": {spec.vector: text},
            "at_step": spec.step,
            "attack": spec.attack,
        },
    }
    return seed.environment.model_copy(update={"config": config})


def inject_branch(
    seed: Trajectory,
    spec: InjectionSpec,
    text: str,
    *,
    agent: Responder,
    agent_model: ComponentSpec,
    branch_id: str,
    deadline: float | None = None,
) -> Trajectory:
    """Replay ``seed`` exactly before step t (drift raises), serve the attacked observation at t (phase
    ``injected``), continue live with ``agent``; the trajectory's outcome carries utility and security."""
    t = spec.step
    if not (0 < t < len(seed.steps)) or seed.steps[t].kind != "tool":
        raise ConfigError(f"step {t} of {seed.id} is not a tool observation; an injection needs one")
    attacked = seed.model_copy(update={"environment": injected_spec(seed, spec, text)})
    result = run_from_seed(attacked, Plan.observe(t), upstream=agent, run_id=branch_id, deadline=deadline)
    return result.session.trajectory(
        task=seed.task,
        outcome=result.outcome,
        harness=seed.harness,
        environment=attacked.environment,
        model=agent_model,
        provenance={**result.extra, "injection_version": INJECTION_VERSION},
    )


def _action(step: Step) -> tuple[Any, ...]:
    """What an agent did at a step, for divergence: its text and its calls (names and arguments; ids differ between
    runs)."""
    return (step.content, tuple((c.name, c.parsed_arguments()) for c in step.tool_calls))


def first_divergence(seed: Trajectory, branch: Trajectory, after: int) -> int | None:
    """The first agent step after ``after`` whose action differs from the seed's at the same index (or the seed has
    none)."""
    for step in branch.steps[after + 1 :]:
        if step.kind != "agent":
            continue
        other = seed.steps[step.index] if step.index < len(seed.steps) else None
        if other is None or other.kind != "agent" or _action(other) != _action(step):
            return step.index
    return None


def security_of(branch: Trajectory) -> dict[str, Any]:
    details = (branch.outcome.details if branch.outcome else {}) or {}
    security = details.get("security")
    return dict(security) if isinstance(security, dict) else {}


def unsafe_target(branch: Trajectory) -> tuple[int | None, str]:
    """The agent step of the first unsafe call, and the rule that found it.

    Rule ``replay_check``: the episode ran AgentDojo's security check after every tool call from the
    injection on; the first tool step after which it held was produced by the agent step whose call it
    answers. If it held only with the final answer (an injection task judged on the output), the final
    answer is the target (rule ``final_answer``)."""
    security = security_of(branch)
    first = security.get("first_unsafe_tool_step")
    if isinstance(first, int) and 0 <= first < len(branch.steps):
        call_id = branch.steps[first].tool_call_id
        for step in reversed(branch.steps[:first]):
            if step.kind == "agent" and (call_id is None or any(c.id == call_id for c in step.tool_calls)):
                return step.index, "replay_check"
    if security.get("attacker_goal_met") is True:
        final = next((s.index for s in reversed(branch.steps) if s.kind == "agent"), None)
        return final, "final_answer"
    return None, "none"


def check_chains(
    primary: int, target: int, attack: Sequence[int], execution: Sequence[int], *, complied: bool = False
) -> list[str]:
    """The seed system's chain rules (seed_systems.md §1): attack chain strictly before the primary,
    execution chain strictly between primary and target, neither containing them, both sorted; the
    primary before the target. Returns the broken rules (empty: all hold).

    ``complied``: the primary is an agent step that complied with injected content (unsafe-completion
    gold), so it may be its own target, but only after a non-empty attack chain (the injection it
    complied with) — the same exception :func:`failforge.attribution._components.check_label` makes."""
    problems = []
    if not (primary < target or (complied and primary == target and len(attack) > 0)):
        problems.append(
            f"the primary (step {primary}) is not before the target (step {target})"
            + (" nor its own target after an attack chain" if complied else "")
        )
    if any(i >= primary for i in attack):
        problems.append(f"attack chain {list(attack)} reaches the primary (step {primary}) or beyond")
    if any(not primary < i < target for i in execution):
        problems.append(f"execution chain {list(execution)} leaves ({primary}, {target})")
    if list(attack) != sorted(set(attack)) or list(execution) != sorted(set(execution)):
        problems.append("a chain is not sorted or repeats a component")
    return problems


__all__ = [
    "DEFAULT_ATTACK",
    "DEFAULT_ATTACK_TARGET",
    "INJECTION_VERSION",
    "AttackPoint",
    "InjectionPoints",
    "InjectionSpec",
    "attack_names",
    "attack_text",
    "check_attack",
    "check_chains",
    "check_injection_task",
    "check_vector",
    "first_divergence",
    "inject_branch",
    "injected_spec",
    "injection_points",
    "shown",
    "unsafe_target",
]
