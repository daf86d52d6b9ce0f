"""tau2's own evaluator on a failforge run, with environments built from the shared parsed DB.

``evaluate_simulation`` asks ``registry.get_env_constructor(domain)`` for a constructor and builds two
environments (predicted and gold), each re-reading the domain DB from disk (airline: 7 MB, ~1 s each).
For the duration of the call the evaluator module's ``registry`` is a view of tau2's registry whose
``get_env_constructor`` returns a constructor of :class:`_LazyEnvironment`: it keeps the ``set_state``
and ``make_tool_call`` it is given and builds the real environment (on a copy-on-access DB,
:mod:`._cow`, restarting telecom's seeded id stream so the replay mints the ids the run saw) only when
something needs it. The two DB hashes are memoised by exactly what determined them (domain, mode,
initial state, message history, tool calls): the gold environment is the same for every attempt of a
task, so after the first evaluation it costs a dictionary lookup. Everything else (which checks run,
how rewards combine) is tau2's code, unchanged.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from failforge.environments.tau2 import _package as pkg
from failforge.trajectory import Outcome

if TYPE_CHECKING:
    from failforge.environments.tau2 import Tau2Episode

_lock = threading.Lock()


#: Hashes of environments already built, by what built them (bounded: one entry per distinct run history).
_HASHES: OrderedDict[str, tuple[str | None, str | None]] = OrderedDict()
_HASHES_MAX = 512


def _plain(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    raise TypeError(f"cannot key {type(value).__name__}")


class _LazyEnvironment:
    """A tau2 environment that is built only when needed, with DB hashes memoised (see the module).

    ``make_tool_call`` is deferred and answers None: tau2's evaluator discards what the gold
    environment's calls return, and an exception one raises is caught when the environment is built, as
    tau2's evaluator catches it (it logs and goes on)."""

    def __init__(self, key: str, build: Callable[[], Any]) -> None:
        self._key = key
        self._build = build
        self._state: dict[str, Any] | None = None
        self._calls: list[dict[str, Any]] = []
        self._real: Any = None

    def set_state(self, **kwargs: Any) -> None:
        if self._real is not None:
            self._real.set_state(**kwargs)
        else:
            self._state = kwargs

    def make_tool_call(self, tool_name: str, requestor: str = "assistant", **arguments: Any) -> Any:
        if self._real is not None:
            return self._real.make_tool_call(tool_name=tool_name, requestor=requestor, **arguments)
        self._calls.append({"tool_name": tool_name, "requestor": requestor, **arguments})
        return None

    def _memo_key(self) -> str:
        text = json.dumps([self._key, self._state, self._calls], sort_keys=True, default=_plain)
        return hashlib.sha256(text.encode()).hexdigest()

    def _materialise(self) -> Any:
        if self._real is None:
            real = self._build()
            if self._state is not None:
                real.set_state(**self._state)
            for call in self._calls:
                try:
                    real.make_tool_call(**call)
                except Exception:  # tau2's evaluator logs a failing gold action and goes on
                    pass
            self._real = real
        return self._real

    def _hashes(self) -> tuple[str | None, str | None]:
        key = self._memo_key()
        with _lock_hashes:
            found = _HASHES.get(key)
            if found is not None:
                _HASHES.move_to_end(key)
                return found
        real = self._materialise()
        found = (real.get_db_hash(), real.get_user_db_hash())
        with _lock_hashes:
            _HASHES[key] = found
            while len(_HASHES) > _HASHES_MAX:
                _HASHES.popitem(last=False)
        return found

    def get_db_hash(self) -> str | None:
        return self._hashes()[0]

    def get_user_db_hash(self) -> str | None:
        return self._hashes()[1]

    def __getattr__(self, name: str) -> Any:  # anything else (env assertions, ...) needs the real one
        return getattr(self._materialise(), name)


_lock_hashes = threading.Lock()


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
        def real() -> Any:
            episode._reset()
            return build_inner(solo_mode=solo_mode)

        return _LazyEnvironment(f"{episode.domain}/{episode.split}/ids-{episode.id_seed}/{solo_mode}", real)

    sim = SimulationRun(
        id=f"failforge-{episode.task_id}",
        task_id=episode.task_id,
        timestamp="0",
        start_time="0",
        end_time="0",
        duration=0.0,
        termination_reason=TerminationReason.USER_STOP if stopped else TerminationReason.MAX_STEPS,
        messages=messages,
    )
    started = time.perf_counter()
    with _lock:
        saved = tau2_evaluator.registry
        tau2_evaluator.registry = _Registry(saved, build)
        try:
            reward = tau2_evaluator.evaluate_simulation(
                sim, episode.task, tau2_evaluator.EvaluationType.ALL, solo_mode=False, domain=episode.domain
            )
        except Exception as exc:  # an evaluator crash on odd agent output is a failed task, not a crash of ours
            return Outcome(
                success=False,
                score=0.0,
                evaluator="tau2.evaluate_simulation",
                details={"error": f"{type(exc).__name__}: {str(exc)[:500]}"},
            )
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
    return Outcome(
        success=reward.reward >= 1.0 - 1e-9,
        score=float(reward.reward),
        evaluator="tau2.evaluate_simulation",
        details=details,
    )
