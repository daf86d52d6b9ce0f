"""Planning AgentDojo's environment-side jobs: which observation steps can carry an injection, and the jobs of
``[plan.injections]`` (injected observations, their compliance flips, injected refusals) over a campaign's seeds."""

from __future__ import annotations

import random
from collections.abc import Sequence

from failforge.environments.agentdojo._env import get_suite
from failforge.environments.agentdojo.gold._observation import (
    InjectionSpec,
    check_attack,
    check_injection_task,
    check_vector,
    injection_points,
)
from failforge.gold import CampaignConfig, JobSpec, Planned
from failforge.trajectory import Trajectory


def plan_injections(
    seed: Trajectory,
    *,
    attacks: Sequence[str] = ("important_instructions",),
    vectors: Sequence[str] | None = None,
    injection_tasks: Sequence[str] | None = None,
    steps_per_seed: int = 2,
    tasks_per_point: int = 1,
    samples: int = 1,
    rng_seed: int = 0,
) -> tuple[list[InjectionSpec], dict[int, str]]:
    """Environment-side injections of an AgentDojo seed: attacks x vectors x observation steps, with up
    to ``tasks_per_point`` of the suite's injection tasks at each (seeded sampling, so reproducible).

    Returns the plan and, for every step not planned, why (a task or agent step, a tool step showing
    no vector, a vector filtered out): what ``--dry-run`` prints. A bad attack, vector or injection task
    is a one-line ConfigError naming the valid ones.
    """
    for attack in attacks:
        check_attack(attack)
    suite_name = str(seed.environment.config.get("suite")) if seed.environment.name == "agentdojo" else ""
    points = injection_points(seed)  # ConfigError for a seed that is not AgentDojo's
    for vector in vectors or ():
        check_vector(suite_name, vector)
    tasks = (
        [check_injection_task(suite_name, t) for t in injection_tasks]
        if injection_tasks
        else sorted(get_suite(suite_name).injection_tasks, key=lambda s: int(s.rsplit("_", 1)[-1]))
    )
    why = dict(points.not_injectable)
    usable: dict[int, list[str]] = {}
    for t, shown in points.vectors.items():
        kept = [v for v in shown if vectors is None or v in vectors]
        if kept:
            usable[t] = kept
        else:
            why[t] = (
                f"the observation shows vector(s) {', '.join(shown)}, none of the requested {', '.join(vectors or ())}"
            )
    rng = random.Random(f"{rng_seed}:{seed.id}:inject")
    chosen = sorted(rng.sample(sorted(usable), min(steps_per_seed, len(usable))))
    for t in sorted(set(usable) - set(chosen)):
        why[t] = f"injectable, but not among the {steps_per_seed} step(s) sampled for this seed"
    plan: list[InjectionSpec] = []
    for t in chosen:
        for attack in attacks:
            for vector in usable[t]:
                picked = sorted(
                    rng.sample(tasks, min(tasks_per_point, len(tasks))), key=lambda s: int(s.rsplit("_", 1)[-1])
                )
                plan.extend(
                    InjectionSpec(seed_id=seed.id, step=t, vector=vector, attack=attack, injection_task=task, sample=k)
                    for task in picked
                    for k in range(samples)
                )
    return plan, dict(sorted(why.items()))


def plan_injection_jobs(config: CampaignConfig, seeds: Sequence[Trajectory]) -> Planned:
    """The ``[plan.injections]`` jobs over ``seeds`` and, one line each, every seed or tool step not planned
    and why (what ``--dry-run`` prints). Vectors and injection tasks are kept per seed to those its suite has.
    Per seed: its injected observations, then (``compliance``) their flips, then (``refusals``) one refusal."""
    from failforge.environments.agentdojo.gold._kinds import ComplianceSpec, RefusalSpec

    cfg = config.plan.injections
    jobs: list[tuple[Trajectory, JobSpec]] = []
    why: list[str] = []
    if cfg is None:
        return Planned()
    for seed in seeds:
        if seed.environment.name != "agentdojo":
            why.append(
                f"{seed.id}: environment {seed.environment.name!r}; environment-side injection is built for AgentDojo"
                " only"
            )
            continue
        suite = get_suite(str(seed.environment.config.get("suite")))
        vectors = (
            [v for v in cfg.vectors if v in suite.get_injection_vector_defaults()] if cfg.vectors is not None else None
        )
        tasks = (
            [t for t in cfg.injection_tasks if t in suite.injection_tasks] if cfg.injection_tasks is not None else None
        )
        if vectors == [] or tasks == []:
            why.append(
                f"{seed.id}: suite {suite.name} has none of the requested"
                f" {'vectors' if vectors == [] else 'injection tasks'}"
            )
            continue
        specs, reasons = plan_injections(
            seed,
            attacks=cfg.attacks,
            vectors=vectors,
            injection_tasks=tasks,
            steps_per_seed=cfg.steps_per_seed,
            tasks_per_point=cfg.tasks_per_point,
            samples=cfg.samples,
            rng_seed=config.plan.rng_seed,
        )
        why.extend(f"{seed.id}@{t}: {reason}" for t, reason in reasons.items() if seed.steps[t].kind == "tool")
        jobs.extend((seed, spec) for spec in specs)
        if cfg.compliance:
            jobs.extend((seed, ComplianceSpec(**spec.model_dump(exclude={"job"}))) for spec in specs)
        first = next((s.index for s in seed.steps if s.kind == "agent" and s.model_call is not None), None)
        if cfg.refusals and first is not None:
            jobs.append((seed, RefusalSpec(seed_id=seed.id, step=first)))
    return Planned(jobs=jobs, not_planned=why)


__all__ = ["plan_injection_jobs", "plan_injections"]
