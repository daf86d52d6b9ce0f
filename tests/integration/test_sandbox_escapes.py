"""Hostile code against both sandbox backends, with two or more sandboxes alive at once.

Each test is an attack that worked against an earlier version of at least one backend (see
docs/SANDBOX.md for the table of attempts, before and after). They use only the sandbox interface
plus what root on the host can see (``/proc``, the docker engine), so they run unchanged against
any version of the backends. Nothing is stubbed: the real kernel, bubblewrap and the docker engine.
Every file or process a test plants on the host is removed at the end, whatever the outcome.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import failforge
from failforge.environments.sandbox import (
    DockerSandbox,
    Sandbox,
    SandboxLimits,
    open_sandbox,
)

LIMITS = SandboxLimits(command_timeout=20.0)
BACKENDS = ["local", "docker"]


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    request.getfixturevalue("docker_ok" if request.param == "docker" else "local_sandbox_ok")
    return request.param


def _need(request, *backends: str) -> None:
    for name in set(backends):
        request.getfixturevalue("docker_ok" if name == "docker" else "local_sandbox_ok")


# -- what root on the host sees ----------------------------------------------------------------------


def _host_processes() -> Iterator[tuple[int, int, str]]:
    """(pid, uid, command line) of every process on the host."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            uid = os.stat(f"/proc/{name}").st_uid
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        yield int(name), uid, cmdline


def _pids_with(marker: str) -> list[int]:
    return [pid for pid, _, cmd in _host_processes() if marker in cmd and "pytest" not in cmd]


def _wait_for(marker: str, present: bool, seconds: float) -> list[int]:
    """Poll until a process whose command line holds ``marker`` exists (or none does); the pids at the end."""
    deadline = time.monotonic() + seconds
    while True:
        pids = _pids_with(marker)
        if bool(pids) == present or time.monotonic() > deadline:
            return pids
        time.sleep(0.05)


def _container_pid(box: DockerSandbox) -> int:
    import docker

    client = docker.from_env()
    try:
        return int(client.api.inspect_container(box.container_id)["State"]["Pid"])
    finally:
        client.close()


def _workspace_on_host(box: Sandbox) -> str:
    """Where root on the host reaches the sandbox's workspace."""
    if isinstance(box, DockerSandbox):
        return f"/proc/{_container_pid(box)}/root/workspace"
    return box.workspace_path  # type: ignore[attr-defined]


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _run_in_background(box: Sandbox, command: str) -> threading.Thread:
    thread = threading.Thread(target=box.exec, args=(command,), kwargs={"timeout": 30}, daemon=True)
    thread.start()
    return thread


# -- 1. the host-side file API under a rename race ---------------------------------------------------


SWAPPER = r"""
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = sys.argv[1].encode(), sys.argv[2].encode()
while True:
    libc.renameat2(-100, a, -100, b, 2)  # AT_FDCWD, RENAME_EXCHANGE
"""


@pytest.mark.parametrize("operation", ["read_file", "write_file", "listing"])
def test_rename_race_cannot_lead_file_operations_out_of_the_workspace(backend, operation):
    """A concurrent process swaps ``d`` (a directory) with a link to a directory outside the workspace
    while failforge reads, writes or lists through ``d``: nothing from outside may come back and
    nothing may be created outside."""
    token = uuid.uuid4().hex[:12]
    outside = f"/tmp/failforge-outside-{token}"
    os.mkdir(outside, 0o700)  # root-only on the host: where a file API running as root would land
    Path(outside, "hostname").write_text("OUTSIDE")
    Path(outside, "only-outside").write_text("OUTSIDE")
    box = open_sandbox(backend, LIMITS)
    swapper: subprocess.Popen | None = None
    try:
        # The same directory in the sandbox's own view, for backends that resolve paths in there.
        box.exec(f"mkdir -p {outside} && echo OUTSIDE > {outside}/hostname && echo OUTSIDE > {outside}/only-outside")
        box.write_file("d/hostname", "workspace-content")
        assert box.exec(f"ln -s {outside} link").exit_code == 0
        ws = _workspace_on_host(box)
        # A separate process (as another sandbox would be), exchanging the two names in a tight loop.
        swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, f"{ws}/d", f"{ws}/link"])
        leaks: list[str] = []
        attempts = 0
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and not leaks:
            attempts += 1
            try:
                if operation == "read_file":
                    data = box.read_file("d/hostname")
                    if data != b"workspace-content":
                        leaks.append(f"read_file returned {data[:40]!r} from outside the workspace")
                elif operation == "write_file":
                    box.write_file("d/planted", "x")
                    if os.path.exists(f"{outside}/planted"):
                        leaks.append(f"write_file created {outside}/planted on the host")
                elif "d/only-outside" in [e.path for e in box.listing().entries]:
                    leaks.append("listing() walked into the directory outside the workspace")
            except OSError:
                continue
        swapper.kill()
        swapper.wait()
        if "planted" in box.exec(f"ls {outside}").stdout.split():
            leaks.append(f"write_file created {outside}/planted inside the sandbox, outside the workspace")
        assert attempts > 100, f"only {attempts} attempts: the race was not exercised"
        assert not leaks, leaks
    finally:
        if swapper is not None:
            swapper.kill()
            swapper.wait()
        box.close()
        shutil.rmtree(outside, ignore_errors=True)


# -- 2. sandboxes reaching each other ----------------------------------------------------------------

PROBE_OTHERS = r"""
import glob, os, sys
secret, marker = sys.argv[1], sys.argv[2]
found = []
victims = []
for proc in glob.glob("/proc/[0-9]*"):
    try:
        if open(proc + "/cmdline", "rb").read() == b"sleep\0" + marker.encode() + b"\0":
            victims.append(proc)
    except OSError:
        pass
for proc in victims:
    try:
        if secret.encode() in open(proc + "/environ", "rb").read():
            found.append("ENVIRON " + proc)
    except OSError:
        pass
    try:
        os.close(os.open(proc + "/mem", os.O_RDWR))
        found.append("MEM " + proc)
    except OSError:
        pass
own = os.stat(".")  # the working directory is the own workspace on every backend
roots = [p + "/root/workspace" for p in victims] + glob.glob("/tmp/*/workspace") + glob.glob("/var/tmp/*/workspace")
for ws in roots:
    try:
        st = os.stat(ws)
        if (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino):
            continue
    except OSError:
        continue
    try:
        if secret not in open(ws + "/solution.py").read():
            continue  # some other workspace on this machine: leave it alone
    except OSError:
        continue  # unreadable, or not the victim's: never written to either
    found.append("READ " + ws)
    try:
        with open(ws + "/solution.py", "a") as handle:
            handle.write("# pwned")
        found.append("REWROTE " + ws)
    except OSError:
        pass
    try:
        with open(ws + "/pwned.txt", "w") as handle:
            handle.write("pwned")
        found.append("WROTE " + ws)
    except OSError:
        pass
print("victim processes seen: %d" % len(victims))
print("\n".join(found) or "nothing")
"""


@pytest.mark.parametrize("attacker,victim", [(a, v) for a in BACKENDS for v in BACKENDS])
def test_sandboxes_cannot_reach_each_other(request, attacker, victim):
    """While a victim sandbox runs a command, another sandbox (either backend) looks for it through
    /proc (environment, memory, root directory) and through host paths, and tries to rewrite its files."""
    _need(request, attacker, victim)
    secret = uuid.uuid4().hex
    marker = f"{random.randint(100, 999)}.{random.randint(100000, 999999)}"
    with open_sandbox(victim, LIMITS) as target, open_sandbox(attacker, LIMITS) as probe:
        target.write_file("solution.py", f"SECRET = {secret!r}\n")
        running = _run_in_background(target, f"env FAILFORGE_SECRET={secret} sleep {marker}")
        try:
            assert _wait_for(f"sleep {marker}", True, 20), "the victim's command never started"
            result = probe.exec(["python3", "-", secret, marker], stdin=PROBE_OTHERS)
        finally:
            _kill(_pids_with(f"sleep {marker}"))
            running.join()
        assert result.stdout.splitlines()[-1:] == ["nothing"], result.stdout + result.stderr
        assert "pwned.txt" not in [e.path for e in target.listing().entries]
        assert target.read_file("solution.py") == f"SECRET = {secret!r}\n".encode()


def test_each_live_sandbox_has_a_host_uid_of_its_own(request):
    """Two sandboxes of each backend at once: every one runs as a different host uid, and none as a real account."""
    _need(request, "docker")
    markers = []
    boxes = [open_sandbox(b, LIMITS) for b in ("local", "local", "docker", "docker")]
    try:
        threads = []
        for box in boxes:
            marker = f"{random.randint(100, 999)}.{random.randint(100000, 999999)}"
            markers.append(marker)
            threads.append(_run_in_background(box, f"sleep {marker}"))
        uids = []
        for marker in markers:
            assert _wait_for(f"sleep {marker}", True, 20), "a sandbox command never started"
            # The command itself (not a wrapper whose command line merely contains it, which can be seen before the
            # command is exec'd: wait for the command itself).
            deadline = time.monotonic() + 20
            found: list[int] = []
            while not found and time.monotonic() < deadline:
                found = [uid for _, uid, cmd in _host_processes() if cmd.strip() == f"sleep {marker}"][:1]
                if not found:
                    time.sleep(0.05)
            assert found, f"the sandbox's own 'sleep {marker}' process never appeared"
            uids += found
        assert len(set(uids)) == len(boxes), f"sandboxes share host uids: {uids}"
        import pwd

        accounts = {entry.pw_uid for entry in pwd.getpwall()}
        assert not set(uids) & accounts, f"a sandbox runs as an account of the host: {set(uids) & accounts}"
    finally:
        for marker in markers:
            _kill(_pids_with(f"sleep {marker}"))
        for box in boxes:
            box.close()


# -- 3. the host, seen from a sandbox ----------------------------------------------------------------


def test_host_command_lines_are_invisible(backend):
    """A host process with a secret on its command line (an ``--api-key=...``) is not visible."""
    secret = uuid.uuid4().hex
    host = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", f"--api-key={secret}"])
    try:
        with open_sandbox(backend, LIMITS) as box:
            result = box.exec("cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '; ps -eo args 2>/dev/null")
        assert secret not in result.stdout
        assert "--api-key" not in result.stdout
    finally:
        host.kill()
        host.wait()


CONNECT = r"""
import socket, sys
for name in sys.argv[1:]:
    address = "\0" + name[1:] if name.startswith("@") else name
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(address)
        print("CONNECTED", name)
    except OSError as exc:
        print("refused", name, exc.errno)
"""


def test_host_unix_sockets_are_unreachable(backend):
    """A world-writable Unix socket on the host filesystem, an abstract one, and the docker socket."""
    token = uuid.uuid4().hex[:12]
    directory = f"/tmp/failforge-socket-{token}"
    os.mkdir(directory, 0o755)
    path = f"{directory}/s"
    servers = []
    accepted: list[str] = []
    for address in (path, f"\0failforge-{token}"):
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(address)
        server.listen(4)
        server.settimeout(0.2)
        servers.append(server)
    os.chmod(path, 0o777)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            for server in servers:
                try:
                    conn, _ = server.accept()
                    accepted.append(str(server.getsockname()))
                    conn.close()
                except OSError:
                    pass

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        with open_sandbox(backend, LIMITS) as box:
            result = box.exec(
                ["python3", "-", path, f"@failforge-{token}", "/var/run/docker.sock", "/run/docker.sock"], stdin=CONNECT
            )
        assert "CONNECTED" not in result.stdout, result.stdout
        assert result.stdout.count("refused") == 4, result.stdout + result.stderr
        assert not accepted
    finally:
        stop.set()
        acceptor.join()
        for server in servers:
            server.close()
        shutil.rmtree(directory, ignore_errors=True)


# -- 4. what one sandbox leaves for another -----------------------------------------------------------


def test_tmp_var_tmp_and_dev_shm_are_private_and_capped(backend):
    """Files in /tmp, /var/tmp and /dev/shm are seen by no concurrent sandbox, not by the host, and not by
    the next sandbox; /dev/shm holds no more than the workspace size."""
    token = uuid.uuid4().hex[:12]
    names = [f"/tmp/failforge-left-{token}", f"/var/tmp/failforge-left-{token}", f"/dev/shm/failforge-left-{token}"]
    look = " ".join(f"cat {n} 2>/dev/null;" for n in names) + " echo looked"
    try:
        with open_sandbox(backend, LIMITS) as first, open_sandbox(backend, LIMITS) as concurrent:
            wrote = first.exec("; ".join(f"echo {token} > {n}" for n in names) + "; " + look)
            assert wrote.stdout.count(token) >= 2, wrote  # /tmp and /dev/shm at least (/var/tmp is read-only in docker)
            assert token not in concurrent.exec(look).stdout
            for name in names:
                assert not os.path.exists(name), f"{name} appeared on the host"
            filled = first.exec(
                f"for i in 1 2 3; do head -c 30000000 /dev/zero > /dev/shm/fill-{token}-$i; done 2>&1; du -sk /dev/shm"
                " | cut -f1"
            )
            used_kb = int(filled.stdout.split()[-1])
            assert used_kb <= LIMITS.workspace_mb * 1024, (
                f"/dev/shm held {used_kb} KiB, over the {LIMITS.workspace_mb} MiB cap"
            )
        with open_sandbox(backend, LIMITS) as later:
            assert token not in later.exec(look).stdout
    finally:
        for name in names + [f"/dev/shm/fill-{token}-{i}" for i in (1, 2, 3)]:
            try:
                os.remove(name)
            except OSError:
                pass


def test_memory_total_holds_across_processes(backend):
    """Four processes each under the per-process limit but together far over the sandbox's total:
    they must not all hold their memory at once."""
    per_process = 300
    # The sandbox's total: the per-process limit, the two tmpfs and 64 MB for the server.
    total_mb = LIMITS.memory_mb + 2 * LIMITS.workspace_mb + 64
    assert per_process < LIMITS.memory_mb and 4 * per_process > total_mb
    hold = f"import time; b = b'x' * ({per_process} * 1024 * 1024); time.sleep(4); print('kept', len(b) // 2**20)"
    with open_sandbox(backend, LIMITS) as box:
        result = box.exec(f'for i in 1 2 3 4; do python3 -c "{hold}" & done; wait')
        assert not result.timed_out, result
        assert result.stdout.count("kept") < 4, f"4 x {per_process} MB were held at once: {result.stdout!r}"
        assert box.exec("echo alive").stdout == "alive\n"


# -- 5. privileges --------------------------------------------------------------------------------


USERNS = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print("unshare(CLONE_NEWUSER):", libc.unshare(0x10000000), ctypes.get_errno())
"""


def test_user_namespaces_cannot_be_created(backend):
    """``unshare -Ur`` (root inside a new user namespace) and the raw system call both fail."""
    with open_sandbox(backend, LIMITS) as box:
        tool = box.exec("unshare -Ur id -u; unshare --user --map-root-user --mount true && echo MOUNT-NS")
        raw = box.exec(["python3", "-"], stdin=USERNS)
    assert tool.stdout.split() == [], tool
    assert "unshare(CLONE_NEWUSER): -1" in raw.stdout, raw


# -- 6. the death of failforge ------------------------------------------------------------------------

PARENT = r"""
import json, sys
from failforge.environments.sandbox import SandboxLimits, open_sandbox
box = open_sandbox(sys.argv[1], SandboxLimits(command_timeout=600))
print(json.dumps({"container": getattr(box, "container_id", None)}), flush=True)
box.exec("sleep " + sys.argv[2])
"""


def test_commands_die_with_failforge(backend):
    """failforge (a separate process here) is SIGKILLed mid-command: the command must not run on."""
    marker = f"{random.randint(300, 599)}.{random.randint(100000, 999999)}"
    src = str(Path(failforge.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    parent = subprocess.Popen([sys.executable, "-c", PARENT, backend, marker], stdout=subprocess.PIPE, env=env)
    container = None
    try:
        assert parent.stdout is not None
        container = json.loads(parent.stdout.readline() or "{}").get("container")
        assert _wait_for(f"sleep {marker}", True, 60), "the command never started"
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        survivors = _wait_for(f"sleep {marker}", False, 30)
        assert not survivors, f"the command outlived failforge: pids {survivors}"
    finally:
        parent.kill()
        parent.wait()
        _kill(_pids_with(f"sleep {marker}"))
        if container:
            import docker

            client = docker.from_env()
            try:
                client.api.remove_container(container, force=True)
            except docker.errors.DockerException:
                pass
            client.close()


# -- 7. a full /tmp -------------------------------------------------------------------------------


def test_a_full_tmp_does_not_break_the_sandbox(backend):
    """A command fills /tmp to the brim; the next commands still run and report their output."""
    token = uuid.uuid4().hex[:12]
    try:
        with open_sandbox(backend, LIMITS) as box:
            box.exec(f"for i in 1 2 3; do head -c 30000000 /dev/zero > /tmp/failforge-fill-{token}-$i; done")
            assert box.exec("echo still-works").stdout == "still-works\n"
            again = box.exec(["python3", "-c", "import sys; print('python-works'); print('err', file=sys.stderr)"])
            assert (again.exit_code, again.stdout, again.stderr) == (0, "python-works\n", "err\n")
    finally:
        for i in (1, 2, 3):
            try:
                os.remove(f"/tmp/failforge-fill-{token}-{i}")
            except OSError:
                pass
