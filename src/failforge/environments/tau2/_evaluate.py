"""tau2's own evaluator on a failforge run, with environments built from the shared parsed DB.

``evaluate_simulation`` asks ``registry.get_env_constructor(domain)`` for a constructor and builds two
environments (predicted and gold), each re-reading the domain DB from disk (airline: 7 MB, ~1 s each).
For the duration of the call the evaluator module's ``registry`` is a view of tau2's registry whose
``get_env_constructor`` returns the shared-template constructor of :mod:`._package`; each build also
restarts telecom's seeded id stream, so the evaluator's replay of the run mints the ids the run saw.
Everything else (which checks run, how rewards combine) is tau2's code, unchanged.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from failforge.environments.tau2 import _package as pkg
from failforge.trajectory import Outcome

if TYPE_CHECKING:
    from failforge.environments.tau2 import Tau2Episode

_lock = threading.Lock()


class _Registry:
    def __init__(self, inner: Any, build: Any) -> None:
        self._inner = inner
        self._build = build

    def get_env_constructor(self, domain: str) -> Any:
        return self._build

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def evaluate(episode: Tau2Episode, messages: list[Any], stopped: bool) -> Outcome:
    from tau2.data_model.simulation import SimulationRun, TerminationReason
    from tau2.evaluator import evaluator as tau2_evaluator

    build_inner = pkg.constructor(episode.domain)

    def build(solo_mode: bool = False) -> Any:
        episode._reset()
        return build_inner(solo_mode=solo_mode)

    sim = SimulationRun(id=f"failforge-{episode.task_id}", task_id=episode.task_id, timestamp="0", start_time="0", end_time="0", duration=0.0,
                        termination_reason=TerminationReason.USER_STOP if stopped else TerminationReason.MAX_STEPS, messages=messages)
    started = time.perf_counter()
    with _lock:
        saved = tau2_evaluator.registry
        tau2_evaluator.registry = _Registry(saved, build)
        try:
            reward = tau2_evaluator.evaluate_simulation(sim, episode.task, tau2_evaluator.EvaluationType.ALL, solo_mode=False, domain=episode.domain)
        except Exception as exc:  # an evaluator crash on odd agent output is a failed task, not a crash of ours
            return Outcome(success=False, score=0.0, evaluator="tau2.evaluate_simulation", details={"error": f"{type(exc).__name__}: {str(exc)[:500]}"})
        finally:
            tau2_evaluator.registry = saved
    details: dict[str, Any] = {
        "domain": episode.domain,
        "task_id": episode.task_id,
        "termination": sim.termination_reason.value,
        "reward_basis": [str(b.value) for b in reward.reward_basis or []],
        "reward_breakdown": {str(getattr(k, "value", k)): v for k, v in (reward.reward_breakdown or {}).items()},
        "info": reward.info if isinstance(reward.info, dict) and "note" in reward.info else None,
        "seconds": round(time.perf_counter() - started, 3),
    }
    return Outcome(success=reward.reward >= 1.0 - 1e-9, score=float(reward.reward), evaluator="tau2.evaluate_simulation", details=details)
