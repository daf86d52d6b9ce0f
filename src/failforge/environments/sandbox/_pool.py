"""A small pool of idle sandboxes per thread, reset between runs instead of destroyed and recreated.

Opening a sandbox is the largest fixed cost of a code run: a container start and removal (docker),
or a bubblewrap namespace, a cgroup and a Python start (local). A run that closes its sandbox
through :func:`release_sandbox` hands it back; it is reset to the state of a freshly opened one
(:meth:`ServedSandbox.reset`: processes, file systems, IPC, PID counter) and the next
:func:`acquire_sandbox` of the same kind in the same thread gets it. A sandbox that cannot be reset
(it hit a limit, its server is gone, it is older than half its lifetime) is closed instead, so a
run never sees anything an earlier run left.

Pools are per thread because the local backend's sandbox dies with the thread that opened it (the
kernel's parent-death signal follows the thread), and a campaign worker thread runs its attempts
one after another. The size (idle sandboxes kept per kind and thread; 0 turns pooling off) comes
from the campaign file (``[pools] sandboxes``), set around each attempt with :func:`sandbox_pool`;
outside a campaign it is ``FAILFORGE_SANDBOX_POOL`` (default 1). :func:`close_pooled_sandboxes`
closes every idle one (executors call it when they finish; it also runs at exit).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

from failforge.environments.sandbox._base import Sandbox, SandboxLimits
from failforge.errors import ConfigError

#: Idle sandboxes kept per kind and thread when nothing else says (``FAILFORGE_SANDBOX_POOL`` overrides).
DEFAULT_POOL_SIZE = 1

_lock = threading.Lock()
#: (thread id, kind) -> idle sandboxes, most recently released last.
_idle: dict[tuple[int, tuple[Any, ...]], list[Sandbox]] = {}
_sizes = threading.local()
#: Attribute naming the kind a sandbox was opened as, set on sandboxes prepared for reuse.
_KIND = "_failforge_pool_kind"


def default_pool_size() -> int:
    text = os.environ.get("FAILFORGE_SANDBOX_POOL", str(DEFAULT_POOL_SIZE))
    try:
        size = int(text)
    except ValueError:
        raise ConfigError(
            f"FAILFORGE_SANDBOX_POOL={text!r} is not a number (idle sandboxes kept per thread; 0 turns pooling off)"
        ) from None
    if size < 0:
        raise ConfigError(f"FAILFORGE_SANDBOX_POOL={size} must be 0 or more")
    return size


def pool_size() -> int:
    """Idle sandboxes this thread keeps per kind (the innermost :func:`sandbox_pool`, else the default)."""
    size = getattr(_sizes, "size", None)
    return default_pool_size() if size is None else int(size)


@contextlib.contextmanager
def sandbox_pool(size: int) -> Iterator[None]:
    """Within the block, this thread keeps up to ``size`` idle sandboxes per kind (0: none, every run opens a fresh
    one)."""
    before = getattr(_sizes, "size", None)
    _sizes.size = size
    try:
        yield
    finally:
        _sizes.size = before


def _kind(backend: str, limits: SandboxLimits, image: str, python_hash_seed: str) -> tuple[Any, ...]:
    """Everything that decides what a fresh sandbox is: two sandboxes of one kind are interchangeable once reset."""
    return (backend, limits.model_dump_json(), image if backend == "docker" else None, python_hash_seed)


def acquire_sandbox(backend: str, limits: SandboxLimits, *, image: str, python_hash_seed: str) -> Sandbox:
    """A sandbox in the state of a freshly opened one: an idle one of this kind from this thread's pool, else a new
    one."""
    from failforge.environments.sandbox import open_sandbox

    size = pool_size()
    if size <= 0:
        return open_sandbox(backend, limits, image=image, python_hash_seed=python_hash_seed)
    kind = _kind(backend, limits, image, python_hash_seed)
    slot = (threading.get_ident(), kind)
    while True:
        with _lock:
            idle = _idle.get(slot)
            box = idle.pop() if idle else None
        if box is None:
            break
        if _reusable(box):
            return box
        _close(box)
    box = open_sandbox(backend, limits, image=image, python_hash_seed=python_hash_seed)
    try:
        box.prepare_reuse()
    except Exception:  # a sandbox that cannot be prepared still serves this run; it is just not kept
        return box
    setattr(box, _KIND, kind)
    return box


def release_sandbox(box: Sandbox) -> None:
    """The run is over: reset the sandbox and keep it for this thread's next run of its kind, or close it."""
    kind: tuple[Any, ...] | None = getattr(box, _KIND, None)
    if kind is None or pool_size() <= 0:
        _close(box)
        return
    slot = (threading.get_ident(), kind)
    with _lock:
        if any(box is other for idle in _idle.values() for other in idle):
            return  # released twice: it is already reset and waiting
        full = len(_idle.get(slot, ())) >= pool_size()
    if full or not _reset(box):
        _close(box)
        return
    with _lock:
        _idle.setdefault(slot, []).append(box)


def close_pooled_sandboxes() -> int:
    """Close every idle pooled sandbox of this process (any thread's); returns how many."""
    with _lock:
        boxes = [box for idle in _idle.values() for box in idle]
        _idle.clear()
    for box in boxes:
        _close(box)
    return len(boxes)


def pooled_count() -> int:
    """Idle sandboxes held by the pools of this process."""
    with _lock:
        return sum(len(idle) for idle in _idle.values())


def _reusable(box: Sandbox) -> bool:
    try:
        return box.reusable()
    except Exception:
        return False


def _reset(box: Sandbox) -> bool:
    try:
        return box.reset()
    except Exception:  # a reset that fails for any reason means: do not reuse
        return False


def _close(box: Sandbox) -> None:
    with contextlib.suppress(Exception):
        box.close()


atexit.register(close_pooled_sandboxes)
