"""The docker sandbox backend: one locked-down container per run, on the real engine.

The container runs the locally built image (``scripts/build_sandbox_image.sh``; nothing is pulled)
with no network, a read-only root, a uid of its own (leased from the reserved range, see
:mod:`._uids`: no two live sandboxes of either backend share one), no capabilities,
``no-new-privileges``, Docker's default seccomp profile, CPU / memory / pids cgroup limits, rlimits,
and three size-capped tmpfs mounts as the only writable places: ``/workspace`` and ``/tmp``
(``workspace_mb`` each) and ``/dev/shm`` (``workspace_mb``, instead of the engine's default 64 MB).
Logging is off (log driver ``none``): the engine keeps no copy of what the server says, which is
every command's output and every file read.

Its main process (PID 1) is the sandbox server (:mod:`._helper`), attached to failforge through the
container's stdin/stdout; the protocol is shared with the local backend (:mod:`._served`). The server
keeps its own I/O in memory files (memfd), not in ``/tmp``, so a command that fills ``/tmp`` cannot
break it. When the attach connection closes (failforge exits or crashes) the server sees EOF, even
in the middle of a command, kills the command and exits, and the container (``auto_remove``)
disappears; a lifetime bounds it in any case. Engine errors, a dead container and a server that stops
answering become :class:`~failforge.errors.InfrastructureError`, never drift.
"""

from __future__ import annotations

import struct
import time
import uuid
from typing import Any

from failforge.environments.sandbox._base import WORKSPACE, SandboxLimits, sandbox_env
from failforge.environments.sandbox._reuse import TmpfsMount, cgroup_dirs_of, limit_events
from failforge.environments.sandbox._served import (
    ENGINE_GRACE,
    HELPER_SOURCE,
    ServedSandbox,
)
from failforge.environments.sandbox._uids import UidLease, lease_uid
from failforge.errors import ConfigError, FailforgeError, InfrastructureError
from failforge.plugins import sandboxes

DEFAULT_IMAGE = "failforge-sandbox:bookworm"
LABEL = "failforge.sandbox"


def _docker_module() -> Any:
    try:
        import docker
    except ImportError as exc:
        raise ConfigError("the docker backend needs the docker SDK: pip install 'failforge[sandbox]'") from exc
    return docker


def docker_client(timeout: float = 60.0) -> Any:
    """A docker SDK client for the local engine, or InfrastructureError saying how to start it."""
    docker = _docker_module()
    try:
        client = docker.from_env(timeout=int(timeout))
        client.ping()
    except docker.errors.DockerException as exc:
        raise InfrastructureError(
            f"the docker engine is not reachable ({exc}); start it (scripts/install_sandbox.sh starts dockerd) or use"
            " backend='local'"
        ) from exc
    return client


def image_present(client: Any, image: str) -> bool:
    docker = _docker_module()
    try:
        client.images.get(image)
        return True
    except docker.errors.ImageNotFound:
        return False


@sandboxes.register(
    "docker", requires=("docker",), description="one locked-down container per run on the real Docker engine"
)
class DockerSandbox(ServedSandbox):
    """One container per run (see module doc). ``container_id`` is public so audits can find it."""

    backend = "docker"

    def __init__(
        self, limits: SandboxLimits | None = None, *, image: str = DEFAULT_IMAGE, python_hash_seed: str = "0"
    ) -> None:
        docker = _docker_module()
        self.limits = limits or SandboxLimits()
        self.image = image
        self.network_isolated = True
        self._env = sandbox_env(python_hash_seed=python_hash_seed)
        self._init_channel()
        self._socket: Any = None
        self._raw: Any = None
        self._stderr = b""
        self._lease: UidLease | None = None
        self._cgroup_dirs: dict[str, str] | None = None
        self._client = docker_client(timeout=self.limits.command_timeout + ENGINE_GRACE)
        try:
            self.image_id: str = self._client.images.get(image).id
        except docker.errors.ImageNotFound:
            self._client.close()
            raise InfrastructureError(
                f"sandbox image {image!r} is not built: run scripts/build_sandbox_image.sh (nothing is pulled from a"
                " registry)"
            ) from None
        except docker.errors.DockerException as exc:
            self._client.close()
            raise InfrastructureError(f"the docker engine could not look up image {image!r}: {exc}") from exc
        try:
            self._lease = lease_uid()
        except FailforgeError:
            self._client.close()
            raise
        #: The host uid this container's processes run as (distinct from every other live sandbox).
        self.uid = self._lease.uid
        lim = self.limits
        tmpfs_opts = f"rw,exec,nosuid,nodev,size={lim.workspace_mb}m,mode=1777"
        ulimits = [
            docker.types.Ulimit(name="fsize", soft=lim.file_size_mb * 1024 * 1024, hard=lim.file_size_mb * 1024 * 1024),
            docker.types.Ulimit(name="nofile", soft=lim.open_files, hard=lim.open_files),
            docker.types.Ulimit(name="core", soft=0, hard=0),
        ]
        api = self._client.api
        self.container_id = ""
        try:
            host_config = api.create_host_config(
                network_mode="none",
                read_only=True,
                tmpfs={WORKSPACE: tmpfs_opts, "/tmp": tmpfs_opts},
                shm_size=f"{lim.workspace_mb}m",
                mem_limit=lim.total_memory_bytes(),
                memswap_limit=lim.total_memory_bytes(),
                pids_limit=lim.pids,
                nano_cpus=int(lim.cpus * 1e9),
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                ulimits=ulimits,
                log_config=docker.types.LogConfig(type="none"),
                auto_remove=True,
            )
            # detach=False makes the engine set StdinOnce: stdin closes when failforge's attach
            # connection does, and the server (PID 1) exits on that EOF.
            self.container_id = api.create_container(
                image,
                command=["python3", "-I", "-S", "-c", HELPER_SOURCE, "--serve", str(lim.lifetime_seconds)],
                name=f"failforge-sandbox-{uuid.uuid4().hex[:12]}",
                user=f"{self.uid}:{self.uid}",
                working_dir=WORKSPACE,
                hostname="sandbox",
                environment=self._env,
                labels={LABEL: "1"},
                stdin_open=True,
                detach=False,
                tty=False,
                host_config=host_config,
            )["Id"]
            # Attach before start, so no byte of the server's output can be missed.
            self._socket = api.attach_socket(
                self.container_id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
            )
            api.start(self.container_id)
        except docker.errors.DockerException as exc:
            self._abandon()
            raise InfrastructureError(f"could not start a sandbox container from {image!r}: {exc}") from exc
        self._raw = getattr(self._socket, "_sock", self._socket)
        self._call("list", wait=60.0)  # the server is up and the workspace is empty

    @classmethod
    def open(cls, limits: SandboxLimits | None, *, image: str | None, python_hash_seed: str) -> DockerSandbox:
        return cls(limits, image=image or DEFAULT_IMAGE, python_hash_seed=python_hash_seed)

    @classmethod
    def doctor(cls, image: str | None) -> tuple[bool, str]:
        image = image or DEFAULT_IMAGE
        try:
            client = docker_client(timeout=30)
        except FailforgeError as exc:
            return (False, str(exc))
        try:
            version = client.version().get("Version", "?")
            if not image_present(client, image):
                return (
                    False,
                    f"engine {version} is up but image {image!r} is not built: run scripts/build_sandbox_image.sh",
                )
        finally:
            client.close()
        started = time.perf_counter()
        try:
            box = DockerSandbox(SandboxLimits(command_timeout=20), image=image)
            try:
                uid = box.uid
                result = box.exec("python3 -c 'import sys; print(sys.version.split()[0])'; cat /proc/net/dev")
            finally:
                box.close()
        except FailforgeError as exc:
            return (False, f"engine {version}, image {image}: a test container failed: {exc}")
        seconds = time.perf_counter() - started
        lines = result.stdout.splitlines()
        if result.exit_code != 0 or not lines:
            return (False, f"test command failed in {image}: exit {result.exit_code}: {result.stderr[-300:]}")
        interfaces = [line.split(":", 1)[0].strip() for line in lines[3:] if ":" in line]
        if interfaces not in (["lo"], []):
            return (False, f"container sees network interfaces {interfaces}; expected none but loopback")
        said = (
            f"engine {version}, image {image} (python {lines[0]}), network none, read-only root, a uid of its own (this"
            f" one ran as {uid}), cgroup cpu/memory/pids limits, logging off; a container start+exec+remove took"
            f" {seconds:.2f}s"
        )
        return (True, said)

    # -- transport: the engine's attach stream --------------------------------------------------

    @property
    def _what(self) -> str:
        return f"sandbox container {self.container_id[:12]}"

    def _send(self, data: bytes, wait: float) -> None:
        self._raw.settimeout(wait)
        self._raw.sendall(data)

    def _recv_exact(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self._raw.recv(size - len(data))
            if not chunk:
                raise EOFError("the sandbox server closed its output")
            data += chunk
        return data

    def _read_reply(self, wait: float) -> bytes:
        """One line of the server's stdout; the engine multiplexes stdout/stderr in 8-byte-header frames."""
        self._raw.settimeout(wait)
        line = b""
        try:
            while not line.endswith(b"\n"):
                header = self._recv_exact(8)
                stream, size = header[0], struct.unpack(">L", header[4:])[0]
                data = self._recv_exact(size)
                if stream == 2:
                    self._stderr = (self._stderr + data)[-4000:]
                else:
                    line += data
        except TimeoutError as exc:
            raise TimeoutError(str(exc)) from exc
        return line

    def _state(self) -> str:
        try:
            info = self._client.api.inspect_container(self.container_id)["State"]
            state = (
                f"container state: {info.get('Status')} (exit code {info.get('ExitCode')}, OOM-killed"
                f" {info.get('OOMKilled')})"
            )
        except Exception:  # removed already (auto_remove) or the engine is gone
            state = "container state: gone (died and was removed, or the engine is unreachable)"
        if self._stderr:
            state += f"; server stderr: {self._stderr.decode('utf-8', 'replace')[-500:]!r}"
        return state

    def _abandon(self) -> None:
        """Tear down after a failure or on close: the sandbox cannot be trusted any more."""
        self._closed = True
        self._release_namespaces()
        for handle in (getattr(self._socket, "_response", None), self._socket, self._raw):
            try:
                if handle is not None:
                    handle.close()  # EOF on the server's stdin: it exits, and auto_remove removes the container
            except (OSError, ValueError):
                pass
        if self.container_id:
            try:
                self._client.api.remove_container(self.container_id, force=True)
            except Exception:  # already gone
                pass
        self._client.close()
        if self._lease is not None:
            # Only now: the container's processes are gone, so the uid may serve another sandbox.
            self._lease.release()

    # -- reuse --------------------------------------------------------------------------------------

    def _host_pid(self) -> int:
        try:
            pid = int(self._client.api.inspect_container(self.container_id)["State"]["Pid"])
        except Exception as exc:
            raise InfrastructureError(f"cannot find the process of {self._what}: {exc}") from exc
        if pid <= 0:
            raise InfrastructureError(f"{self._what} is not running; {self._state()}")
        return pid

    def _fresh_mounts(self) -> tuple[TmpfsMount, ...]:
        """As the engine mounts them for this container (``tmpfs=`` and ``shm_size=`` in ``__init__``)."""
        size = f"size={self.limits.workspace_mb * 1024 * 1024}"
        # In the order the engine mounts them, so they keep their order among themselves in the mount table.
        return (
            TmpfsMount("/dev/shm", f"nosuid,nodev,noexec,{size}", source="shm"),
            TmpfsMount(WORKSPACE, f"nosuid,nodev,{size}"),
            TmpfsMount("/tmp", f"nosuid,nodev,{size}"),
        )

    def _limit_events(self) -> dict[str, int]:
        if self._cgroup_dirs is None:
            self._cgroup_dirs = cgroup_dirs_of(self._fresh[0].server_pid if self._fresh else self._host_pid())
        dirs = self._cgroup_dirs
        memory, pids = dirs.get("memory") or dirs.get(""), dirs.get("pids") or dirs.get("")
        if not memory or not pids:
            return {"cgroup": 1}
        return limit_events(memory, pids)

    def _forget_run(self) -> None:
        self._stderr = b""

    def alive(self) -> bool:
        """True while the container is running (an engine error counts as not alive)."""
        if self._closed:
            return False
        try:
            return bool(self._client.api.inspect_container(self.container_id)["State"]["Running"])
        except Exception:
            return False

    def describe(self) -> dict[str, object]:
        return {"backend": self.backend, "network_isolated": True, "image": self.image, "image_id": self.image_id}
