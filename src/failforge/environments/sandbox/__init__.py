"""Code sandboxes for code-running environments (HumanEval): docker and local backends, one interface.

A :class:`Sandbox` runs commands in an isolated workspace and fingerprints itself (sorted
``(path, size, sha256)`` of the workspace plus the last command's exit code / stdout / stderr, with
declared volatile parts masked), so replay can re-execute every command and assert the same state.

Both backends run the same server (:mod:`._helper`) as PID 1 of the sandbox and talk to it the same
way (:mod:`._served`); every file operation happens inside, as the sandbox's own uid.

- ``docker``: one locked-down container per run on the real engine (no network, read-only root,
  no capabilities, cgroup limits, tmpfs workspace, logging off, a uid of its own).
- ``local``: one bubblewrap namespace per run (no engine needed): read-only system view, private
  /proc and size-capped tmpfs, no network, seccomp, a cgroup with total limits, a uid of its own.
  It refuses to run where it cannot have all of that (:func:`local_isolation` says what is missing).

No two live sandboxes, of either backend, share a host uid (:mod:`._uids`). :func:`sandbox_doctor`
says which backends work here and why not. ``docs/SANDBOX.md`` has the threat model.

:func:`acquire_sandbox` / :func:`release_sandbox` keep a small per-thread pool of sandboxes that are
reset to the fresh state between runs instead of destroyed and recreated (:mod:`._pool`, :mod:`._reuse`).
"""

from __future__ import annotations

from typing import NamedTuple

from failforge.environments.sandbox._base import (
    EXCLUDE,
    MAX_FILE_PARTS,
    NORMALISER_VERSION,
    VOLATILE,
    WORKSPACE,
    BackendName,
    ExecResult,
    Sandbox,
    SandboxLimits,
    SessionReply,
    WorkspaceEntry,
    WorkspaceListing,
    compose_fingerprint,
    workspace_relative,
)
from failforge.environments.sandbox._docker import (
    DEFAULT_IMAGE,
    DockerSandbox,
    docker_client,
    image_present,
)
from failforge.environments.sandbox._local import (
    LocalIsolation,
    LocalSandbox,
    local_isolation,
)
from failforge.environments.sandbox._pool import (
    acquire_sandbox,
    close_pooled_sandboxes,
    pool_size,
    pooled_count,
    release_sandbox,
    sandbox_pool,
)
from failforge.errors import FailforgeError
from failforge.plugins import sandboxes

#: The built-in backends; more can be registered in ``failforge.plugins.sandboxes``.
BACKENDS: tuple[BackendName, ...] = ("docker", "local")


class DoctorRow(NamedTuple):
    """One line of ``failforge doctor`` for a sandbox backend."""

    backend: str
    works: bool
    why: str


def open_sandbox(
    backend: BackendName,
    limits: SandboxLimits | None = None,
    *,
    image: str = DEFAULT_IMAGE,
    python_hash_seed: str = "0",
) -> Sandbox:
    """A fresh sandbox of ``backend``; close it (or use it as a context manager) to destroy it."""
    return sandboxes.get(backend).open(limits, image=image, python_hash_seed=python_hash_seed)


def sandbox_doctor(image: str = DEFAULT_IMAGE, backends: tuple[BackendName, ...] = ()) -> list[DoctorRow]:
    """Whether each backend works here, and why not: ``[(backend, works, why), ...]``.

    It starts a real container and a real local command rather than trusting configuration, because
    the failures that matter (engine down, image missing, namespace refused) only show when tried.
    The local row says "CANNOT ISOLATE THE NETWORK" when the kernel refuses a network namespace.
    """
    classes = [sandboxes.get(b) for b in backends or tuple(sandboxes.names())]
    rows = []
    for name, cls in zip(backends or tuple(sandboxes.names()), classes, strict=False):
        try:
            works, why = cls.doctor(image)
        except Exception as exc:  # the doctor must report, never crash
            works, why = False, f"{type(exc).__name__}: {exc}"
        rows.append(DoctorRow(name, works, why))
    return rows


def resolve_backend(name: str) -> BackendName:
    """``auto`` is docker when it works here, else local; an explicit name is returned as is."""
    if name != "auto":
        return sandboxes.canonical(name)
    try:
        client = docker_client(timeout=10)
    except FailforgeError:
        return "local"
    try:
        return "docker" if image_present(client, DEFAULT_IMAGE) else "local"
    finally:
        client.close()


__all__ = [
    "BACKENDS",
    "DEFAULT_IMAGE",
    "EXCLUDE",
    "MAX_FILE_PARTS",
    "NORMALISER_VERSION",
    "VOLATILE",
    "WORKSPACE",
    "BackendName",
    "DockerSandbox",
    "DoctorRow",
    "ExecResult",
    "LocalIsolation",
    "LocalSandbox",
    "Sandbox",
    "SandboxLimits",
    "SessionReply",
    "WorkspaceEntry",
    "WorkspaceListing",
    "acquire_sandbox",
    "close_pooled_sandboxes",
    "compose_fingerprint",
    "local_isolation",
    "open_sandbox",
    "pool_size",
    "pooled_count",
    "release_sandbox",
    "resolve_backend",
    "sandbox_doctor",
    "sandbox_pool",
    "workspace_relative",
]
