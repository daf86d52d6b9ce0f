"""Code sandboxes for code-running environments (HumanEval): docker and local backends, one interface.

A :class:`Sandbox` runs commands in an isolated workspace and fingerprints itself (sorted
``(path, size, sha256)`` of the workspace plus the last command's exit code / stdout / stderr, with
declared volatile parts masked), so replay can re-execute every command and assert the same state.

- ``docker``: one locked-down container per run on the real engine (no network, read-only root,
  unprivileged, cgroup limits, tmpfs workspace). The strong one; use it for untrusted model code.
- ``local``: a temporary directory and kernel namespaces + rlimits (no engine needed). No network
  when the kernel allows a network namespace (``network_isolated``), but no filesystem jail.

:func:`sandbox_doctor` says which backends work here and why not.

Known limits of the local backend: it is no filesystem jail (commands read what uid 65534 may read on
the host); RLIMIT_NPROC is per uid, so concurrent local sandboxes (and the docker sandboxes' processes,
which run as the same uid) share one budget of ``limits.pids`` processes; run as a non-root user it
relies on unprivileged user namespaces instead of dropping to uid 65534.
"""

from __future__ import annotations

import time
from typing import Literal, NamedTuple

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
    WorkspaceEntry,
    WorkspaceListing,
    compose_fingerprint,
    workspace_relative,
)
from failforge.environments.sandbox._docker import DEFAULT_IMAGE, DockerSandbox, docker_client, image_present
from failforge.environments.sandbox._local import LocalIsolation, LocalSandbox, local_isolation
from failforge.errors import ConfigError, FailforgeError

BACKENDS: tuple[BackendName, ...] = ("docker", "local")


class DoctorRow(NamedTuple):
    """One line of ``failforge doctor`` for a sandbox backend."""

    backend: str
    works: bool
    why: str


def open_sandbox(
    backend: BackendName, limits: SandboxLimits | None = None, *, image: str = DEFAULT_IMAGE, python_hash_seed: str = "0"
) -> Sandbox:
    """A fresh sandbox of ``backend``; close it (or use it as a context manager) to destroy it."""
    if backend == "docker":
        return DockerSandbox(limits, image=image, python_hash_seed=python_hash_seed)
    if backend == "local":
        return LocalSandbox(limits, python_hash_seed=python_hash_seed)
    raise ConfigError(f"unknown sandbox backend {backend!r}; expected one of {', '.join(BACKENDS)}")


def _docker_row(image: str) -> DoctorRow:
    try:
        client = docker_client(timeout=30)
    except FailforgeError as exc:
        return DoctorRow("docker", False, str(exc))
    try:
        version = client.version().get("Version", "?")
        if not image_present(client, image):
            return DoctorRow("docker", False, f"engine {version} is up but image {image!r} is not built: run scripts/build_sandbox_image.sh")
    finally:
        client.close()
    started = time.perf_counter()
    try:
        with DockerSandbox(SandboxLimits(command_timeout=20), image=image) as box:
            result = box.exec("python3 -c 'import sys; print(sys.version.split()[0])'; cat /proc/net/dev")
    except FailforgeError as exc:
        return DoctorRow("docker", False, f"engine {version}, image {image}: a test container failed: {exc}")
    seconds = time.perf_counter() - started
    lines = result.stdout.splitlines()
    if result.exit_code != 0 or not lines:
        return DoctorRow("docker", False, f"test command failed in {image}: exit {result.exit_code}: {result.stderr[-300:]}")
    interfaces = [line.split(":", 1)[0].strip() for line in lines[3:] if ":" in line]
    if interfaces not in (["lo"], []):
        return DoctorRow("docker", False, f"container sees network interfaces {interfaces}; expected none but loopback")
    return DoctorRow(
        "docker",
        True,
        f"engine {version}, image {image} (python {lines[0]}), network none, read-only root, uid 65534, "
        f"cgroup cpu/memory/pids limits; a container start+exec+remove took {seconds:.2f}s",
    )


def _local_row() -> DoctorRow:
    try:
        iso = local_isolation(refresh=True)
        with LocalSandbox(SandboxLimits(command_timeout=20)) as box:
            result = box.exec("python3 -c 'import sys; print(sys.version.split()[0])'")
    except FailforgeError as exc:
        return DoctorRow("local", False, str(exc))
    if result.exit_code != 0:
        return DoctorRow("local", False, f"python3 did not run in the local sandbox: exit {result.exit_code}: {result.stderr[-300:]}")
    prefix = "" if iso.network else "runs, but CANNOT ISOLATE THE NETWORK: "
    return DoctorRow("local", True, f"{prefix}python {result.stdout.strip()}; {iso.summary()}")


def sandbox_doctor(image: str = DEFAULT_IMAGE, backends: tuple[BackendName, ...] = BACKENDS) -> list[DoctorRow]:
    """Whether each backend works here, and why not: ``[(backend, works, why), ...]``.

    It starts a real container and a real local command rather than trusting configuration, because
    the failures that matter (engine down, image missing, namespace refused) only show when tried.
    The local row says "CANNOT ISOLATE THE NETWORK" when the kernel refuses a network namespace.
    """
    rows = {"docker": lambda: _docker_row(image), "local": _local_row}
    unknown = [b for b in backends if b not in rows]
    if unknown:
        raise ConfigError(f"unknown sandbox backend(s) {unknown}; expected {', '.join(BACKENDS)}")
    return [rows[b]() for b in backends]


def resolve_backend(name: Literal["auto", "docker", "local"]) -> BackendName:
    """``auto`` is docker when it works here, else local; an explicit name is returned as is."""
    if name in BACKENDS:
        return name  # type: ignore[return-value]
    if name != "auto":
        raise ConfigError(f"unknown sandbox backend {name!r}; expected auto, {', '.join(BACKENDS)}")
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
    "WorkspaceEntry",
    "WorkspaceListing",
    "compose_fingerprint",
    "local_isolation",
    "open_sandbox",
    "resolve_backend",
    "sandbox_doctor",
    "workspace_relative",
]
