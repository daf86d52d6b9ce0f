"""The docker sandbox backend: one locked-down container per run, on the real engine.

The container runs the locally built image (``scripts/build_sandbox_image.sh``; nothing is pulled)
with no network, a read-only root, an unprivileged user, no capabilities, ``no-new-privileges``,
CPU / memory / pids cgroup limits, rlimits, and two size-capped tmpfs mounts (``/workspace`` and
``/tmp``) as the only writable places.

Its main process (PID 1) is :mod:`failforge.environments.sandbox._helper` in server mode, attached to
failforge through the container's stdin/stdout: every operation is one JSON line each way, so a tool
call plus the fingerprint after it cost one round trip instead of a ``docker exec`` (see the helper
for why PID 1 also makes it robust against ``kill -9 -1`` and what it cleans up after each command).
When the attach connection closes (failforge exits or crashes) the server sees EOF and the container
(``auto_remove``) disappears; a lifetime bounds it in any case. Engine errors, a dead container and a
server that stops answering become :class:`~failforge.errors.InfrastructureError`, never drift.
"""

from __future__ import annotations

import base64
import json
import struct
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from failforge.environments._base import Fingerprint
from failforge.environments.sandbox._base import (
    EXCLUDE,
    WORKSPACE,
    ExecResult,
    Sandbox,
    SandboxLimits,
    WorkspaceListing,
    compose_fingerprint,
    sandbox_env,
    workspace_os_error,
    workspace_relative,
)
from failforge.errors import ConfigError, FailforgeError, InfrastructureError
from failforge.plugins import sandboxes

DEFAULT_IMAGE = "failforge-sandbox:bookworm"
LABEL = "failforge.sandbox"
USER = "65534:65534"
MAX_LIST_ENTRIES = 5000
#: Seconds the engine call may take beyond the command's own timeout before the container is presumed wedged.
ENGINE_GRACE = 30.0

_HELPER_SOURCE = Path(__file__).with_name("_helper.py").read_text(encoding="utf-8")


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
            f"the docker engine is not reachable ({exc}); start it (scripts/install_sandbox.sh starts dockerd) or use backend='local'"
        ) from exc
    return client


def image_present(client: Any, image: str) -> bool:
    docker = _docker_module()
    try:
        client.images.get(image)
        return True
    except docker.errors.ImageNotFound:
        return False


@sandboxes.register("docker", requires=("docker",), description="one locked-down container per run on the real Docker engine")
class DockerSandbox(Sandbox):
    """One container per run (see module doc). ``container_id`` is public so audits can find it."""

    backend = "docker"

    def __init__(self, limits: SandboxLimits | None = None, *, image: str = DEFAULT_IMAGE, python_hash_seed: str = "0") -> None:
        docker = _docker_module()
        self.limits = limits or SandboxLimits()
        self.image = image
        self.network_isolated = True
        self._env = sandbox_env(python_hash_seed=python_hash_seed)
        self._last: ExecResult | None = None
        self._snapshot: WorkspaceListing | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._client = docker_client(timeout=self.limits.command_timeout + ENGINE_GRACE)
        try:
            self.image_id: str = self._client.images.get(image).id
        except docker.errors.ImageNotFound:
            self._client.close()
            raise InfrastructureError(f"sandbox image {image!r} is not built: run scripts/build_sandbox_image.sh (nothing is pulled from a registry)") from None
        except docker.errors.DockerException as exc:
            self._client.close()
            raise InfrastructureError(f"the docker engine could not look up image {image!r}: {exc}") from exc
        lim = self.limits
        tmpfs_opts = f"rw,exec,nosuid,nodev,size={lim.workspace_mb}m,mode=1777"
        ulimits = [
            docker.types.Ulimit(name="fsize", soft=lim.file_size_mb * 1024 * 1024, hard=lim.file_size_mb * 1024 * 1024),
            docker.types.Ulimit(name="nofile", soft=lim.open_files, hard=lim.open_files),
            docker.types.Ulimit(name="core", soft=0, hard=0),
        ]
        # The cgroup holds the server and the tmpfs pages too, so it gets headroom over the per-process limit.
        memory = (lim.memory_mb + 2 * lim.workspace_mb + 64) * 1024 * 1024
        api = self._client.api
        self._socket: Any = None
        self._stderr = b""
        try:
            host_config = api.create_host_config(
                network_mode="none",
                read_only=True,
                tmpfs={WORKSPACE: tmpfs_opts, "/tmp": tmpfs_opts},
                mem_limit=memory,
                memswap_limit=memory,
                pids_limit=lim.pids,
                nano_cpus=int(lim.cpus * 1e9),
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                ulimits=ulimits,
                auto_remove=True,
            )
            # detach=False makes the engine set StdinOnce: stdin closes when failforge's attach
            # connection does, and the server (PID 1) exits on that EOF.
            self.container_id: str = api.create_container(
                image,
                command=["python3", "-I", "-c", _HELPER_SOURCE, "--serve", str(lim.lifetime_seconds)],
                name=f"failforge-sandbox-{uuid.uuid4().hex[:12]}",
                user=USER,
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
            self._socket = api.attach_socket(self.container_id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            api.start(self.container_id)
        except docker.errors.DockerException as exc:
            self._abandon()
            raise InfrastructureError(f"could not start a sandbox container from {image!r}: {exc}") from exc
        self._raw = getattr(self._socket, "_sock", self._socket)
        self._call("list", wait=60.0)  # the server is up and the workspace is empty

    # -- helper round trip --------------------------------------------------------------------

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
                return (False, f"engine {version} is up but image {image!r} is not built: run scripts/build_sandbox_image.sh")
        finally:
            client.close()
        started = time.perf_counter()
        try:
            with DockerSandbox(SandboxLimits(command_timeout=20), image=image) as box:
                result = box.exec("python3 -c 'import sys; print(sys.version.split()[0])'; cat /proc/net/dev")
        except FailforgeError as exc:
            return (False, f"engine {version}, image {image}: a test container failed: {exc}")
        seconds = time.perf_counter() - started
        lines = result.stdout.splitlines()
        if result.exit_code != 0 or not lines:
            return (False, f"test command failed in {image}: exit {result.exit_code}: {result.stderr[-300:]}")
        interfaces = [line.split(":", 1)[0].strip() for line in lines[3:] if ":" in line]
        if interfaces not in (["lo"], []):
            return (False, f"container sees network interfaces {interfaces}; expected none but loopback")
        return (
            True,
            f"engine {version}, image {image} (python {lines[0]}), network none, read-only root, uid 65534, "
            f"cgroup cpu/memory/pids limits; a container start+exec+remove took {seconds:.2f}s",
        )



    def _recv_exact(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self._raw.recv(size - len(data))
            if not chunk:
                raise EOFError("the sandbox server closed its output")
            data += chunk
        return data

    def _read_reply(self) -> bytes:
        """One line of the server's stdout; the engine multiplexes stdout/stderr in 8-byte-header frames."""
        line = b""
        while not line.endswith(b"\n"):
            header = self._recv_exact(8)
            stream, size = header[0], struct.unpack(">L", header[4:])[0]
            data = self._recv_exact(size)
            if stream == 2:
                self._stderr = (self._stderr + data)[-4000:]
            else:
                line += data
        return line

    def _call(self, op: str, *, wait: float | None = None, **fields: Any) -> dict[str, Any]:
        """One request to the in-container server and its reply; any transport failure is infrastructure."""
        if self._closed:
            raise InfrastructureError("the docker sandbox was closed; open a new episode")
        request = {"op": op, "root": WORKSPACE, "exclude": list(EXCLUDE), "max_entries": MAX_LIST_ENTRIES, **fields}
        wait = wait if wait is not None else self.limits.command_timeout + ENGINE_GRACE
        try:
            self._raw.settimeout(wait)
            self._raw.sendall(json.dumps(request).encode("utf-8") + b"\n")
            reply = json.loads(self._read_reply())
        except (OSError, EOFError, ValueError) as exc:
            what = "did not answer in time" if isinstance(exc, TimeoutError) else f"stopped answering ({type(exc).__name__}: {exc})"
            state = self._container_state()
            self._abandon()
            raise InfrastructureError(
                f"sandbox container {self.container_id[:12]} {what}; container state: {state}"
                + (f"; server stderr: {self._stderr.decode('utf-8', 'replace')[-500:]!r}" if self._stderr else "")
            ) from exc
        if "listing" in reply:
            self._snapshot = WorkspaceListing.from_raw(reply["listing"])
        return reply

    def _container_state(self) -> str:
        try:
            info = self._client.api.inspect_container(self.container_id)["State"]
            return f"{info.get('Status')} (exit code {info.get('ExitCode')}, OOM-killed {info.get('OOMKilled')})"
        except Exception:  # removed already (auto_remove) or the engine is gone
            return "gone (died and was removed, or the engine is unreachable)"

    def _abandon(self) -> None:
        """Tear down after a failure: the sandbox cannot be trusted any more."""
        self._closed = True
        for handle in (getattr(self._socket, "_response", None), self._socket, getattr(self, "_raw", None)):
            try:
                if handle is not None:
                    handle.close()  # EOF on the server's stdin: it exits, and auto_remove removes the container
            except (OSError, ValueError):
                pass
        cid = getattr(self, "container_id", None)
        if cid is not None:
            try:
                self._client.api.remove_container(cid, force=True)
            except Exception:  # already gone
                pass
        self._client.close()

    def _raise_op_error(self, reply: dict[str, Any], path: str) -> None:
        """Re-raise the helper's error as the same type, worded as the local backend words it."""
        if reply.get("ok"):
            return
        kind = str(reply.get("error_type", "OSError"))
        message = str(reply.get("error", "unknown error"))
        if kind == "PermissionError" and "leaves the workspace" in message:
            raise PermissionError(message)
        error_type = {t.__name__: t for t in (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)}.get(kind)
        if error_type is not None:
            raise workspace_os_error(error_type(message), path)
        if kind == "ValueError":
            raise ValueError(message)
        raise OSError(f"{message}: {path}")

    # -- Sandbox ------------------------------------------------------------------------------

    def exec(self, command: str | list[str], timeout: float | None = None, *, stdin: str | bytes | None = None) -> ExecResult:
        limit = float(timeout if timeout is not None else self.limits.command_timeout)
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        data = stdin.encode("utf-8") if isinstance(stdin, str) else (stdin or b"")
        with self._lock:
            started = time.monotonic()
            # Past the command's own timeout plus a grace period the server is presumed wedged
            # (InfrastructureError), never waited on forever.
            reply = self._call(
                "exec",
                wait=limit + ENGINE_GRACE,
                argv=argv,
                cwd=WORKSPACE,
                env=self._env,
                io_dir="/tmp",
                stdin_b64=base64.b64encode(data).decode("ascii"),
                timeout=limit,
                rlimits=self.limits.rlimits(),
                output_limit=self.limits.output_limit,
            )
            if not reply.get("ok"):
                raise InfrastructureError(f"the sandbox helper could not run the command: {reply.get('error')}")
            cap = self.limits.output_limit
            result = ExecResult(
                exit_code=int(reply["exit_code"]),
                stdout=base64.b64decode(reply["stdout_b64"]).decode("utf-8", errors="replace"),
                stderr=base64.b64decode(reply["stderr_b64"]).decode("utf-8", errors="replace"),
                timed_out=bool(reply["timed_out"]),
                truncated=max(int(reply["stdout_size"]), int(reply["stderr_size"])) > cap,
                seconds=round(time.monotonic() - started, 4),
            )
            self._last = result
            return result

    def read_file(self, path: str) -> bytes:
        rel = workspace_relative(path)
        with self._lock:
            reply = self._call("read", path=rel, limit=self.limits.output_limit)
        self._raise_op_error(reply, rel)
        return base64.b64decode(reply["content_b64"])

    def write_file(self, path: str, content: str | bytes) -> None:
        rel = workspace_relative(path)
        data = content.encode("utf-8") if isinstance(content, str) else content
        if len(data) > self.limits.file_size_mb * 1024 * 1024:
            raise ValueError(f"file is {len(data)} bytes, over the sandbox's file size limit of {self.limits.file_size_mb} MiB")
        with self._lock:
            reply = self._call("write", path=rel, content_b64=base64.b64encode(data).decode("ascii"))
        self._raise_op_error(reply, rel)

    def listing(self) -> WorkspaceListing:
        """A fresh listing of the workspace (one round trip)."""
        with self._lock:
            self._call("list")
            snapshot, self._snapshot = self._snapshot, None
        assert snapshot is not None
        return snapshot

    def fingerprint(self) -> Fingerprint:
        """The workspace as the operation that just ran left it, else a fresh listing.

        Every operation lists the workspace at its end, in the same round trip; the fingerprint
        right after it uses that listing once, and any later call lists afresh.
        """
        with self._lock:
            snapshot, self._snapshot = self._snapshot, None
        return compose_fingerprint(snapshot if snapshot is not None else self.listing(), self._last)

    @property
    def last_exec(self) -> ExecResult | None:
        return self._last

    def alive(self) -> bool:
        """True while the container is running (an engine error counts as not alive)."""
        if self._closed:
            return False
        try:
            return bool(self._client.api.inspect_container(self.container_id)["State"]["Running"])
        except Exception:
            return False

    def close(self) -> None:
        if self._closed:
            return
        self._abandon()

    def describe(self) -> dict[str, object]:
        return {"backend": self.backend, "network_isolated": True, "image": self.image, "image_id": self.image_id}
