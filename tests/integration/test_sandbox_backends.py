"""Both sandbox backends on the real machine: the real docker engine and the real local kernel fences.

Nothing is stubbed. The docker tests need a running engine and the locally built image
(``bash scripts/install_sandbox.sh``); they fail with that instruction when either is missing, unless
FAILFORGE_SANDBOX_SKIP_DOCKER=1 says to skip them. Network tests only ever target this machine's
loopback (a server the test starts) and read the sandbox's own routing table: no packet is sent anywhere.
"""

from __future__ import annotations

import errno
import os
import socket
import time
import uuid

import pytest

from failforge.environments.sandbox import (
    EXCLUDE,
    NORMALISER_VERSION,
    DockerSandbox,
    LocalSandbox,
    Sandbox,
    SandboxLimits,
    compose_fingerprint,
    open_sandbox,
    sandbox_doctor,
    workspace_relative,
)
from failforge.errors import ConfigError, InfrastructureError

FAST = SandboxLimits(command_timeout=5.0)


@pytest.fixture(params=["local", "docker"])
def box(request) -> Sandbox:
    request.getfixturevalue("docker_ok" if request.param == "docker" else "local_sandbox_ok")
    sandbox = open_sandbox(request.param, FAST)
    yield sandbox
    sandbox.close()


def _server_pid(box: Sandbox) -> int:
    """Host pid of the sandbox's PID 1 (the server)."""
    if isinstance(box, DockerSandbox):
        import docker

        client = docker.from_env()
        try:
            return int(client.api.inspect_container(box.container_id)["State"]["Pid"])
        finally:
            client.close()
    assert isinstance(box, LocalSandbox) and box.server_pid is not None
    return box.server_pid


def _leftovers(box: Sandbox) -> list[str]:
    """Processes of this sandbox other than its server (and the local backend's bubblewrap monitor), as
    ``pid cmdline``: every sandbox has a host uid of its own, so its processes are exactly that uid's."""
    keep = {_server_pid(box)}
    if isinstance(box, LocalSandbox) and box._proc is not None:
        keep.add(box._proc.pid)
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid != box.uid or int(pid) in keep:  # type: ignore[attr-defined]
                continue
            with open(f"/proc/{pid}/stat", "rb") as handle:
                if handle.read().rsplit(b")", 1)[-1].split()[0] == b"Z":
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode()
            found.append(f"{pid} {cmdline}")
        except OSError:
            pass
    return found


# -- the interface ---------------------------------------------------------------------------------


def test_exec_reports_exit_code_stdout_stderr_in_a_pinned_environment(box):
    result = box.exec("echo out; echo err >&2; pwd; echo $TZ $PYTHONHASHSEED $LANG; exit 3")
    assert result.exit_code == 3 and not result.timed_out
    assert result.stdout.splitlines() == ["out", "/workspace", "UTC 0 C.UTF-8"]
    assert result.stderr == "err\n"
    py = box.exec(["python3", "-"], stdin="print(sorted({'b', 'a'}), {'x', 'y', 'z'})\n")
    again = box.exec(["python3", "-"], stdin="print(sorted({'b', 'a'}), {'x', 'y', 'z'})\n")
    assert py.exit_code == 0 and py.stdout == again.stdout  # set order is pinned by PYTHONHASHSEED


def test_files_round_trip_and_paths_cannot_leave_the_workspace(box):
    box.write_file("pkg/mod.py", "X = 1\n")
    box.write_file("/workspace/top.txt", "héllo")
    assert box.read_file("pkg/mod.py") == b"X = 1\n"
    assert box.read_file("./top.txt") == "héllo".encode()
    assert box.exec("python3 -c 'import pkg.mod; print(pkg.mod.X)'").stdout == "1\n"
    for bad in ("../x", "/etc/passwd", "pkg/../../x", ""):
        with pytest.raises(PermissionError):
            box.read_file(bad)
        with pytest.raises(PermissionError):
            box.write_file(bad, "x")
    with pytest.raises(FileNotFoundError):
        box.read_file("missing.py")
    # A link the sandbox made to a host file is never followed from outside the sandbox.
    assert box.exec("ln -s /etc/passwd leak; ln -s /etc etc").exit_code == 0
    with pytest.raises(PermissionError):
        box.read_file("leak")
    with pytest.raises(PermissionError):
        box.write_file("etc/evil", "x")


def test_workspace_relative_accepts_the_usual_spellings():
    assert (
        workspace_relative("/workspace/a/b.py")
        == workspace_relative("./a/b.py")
        == workspace_relative("a//b.py")
        == "a/b.py"
    )
    with pytest.raises(PermissionError):
        workspace_relative("/workspace/../etc")


def test_fingerprint_covers_files_and_last_command_and_names_parts(box):
    empty = box.fingerprint()
    assert empty.parts == {}
    box.write_file("solution.py", "def f():\n    return 1\n")
    after_write = box.fingerprint()
    assert set(after_write.parts) == {"file:solution.py"} and after_write.digest != empty.digest
    box.exec("mkdir -p data && printf abc > data/x.txt && echo done")
    fp = box.fingerprint()
    assert {"file:solution.py", "dir:data", "file:data/x.txt", "exec:exit_code", "exec:stdout", "exec:stderr"} == set(
        fp.parts
    )
    assert fp.parts["file:data/x.txt"].startswith("3:")  # size:sha256
    assert fp.parts["exec:exit_code"] == "0"
    # Same state, same fingerprint (and nothing the fingerprint reads is time-dependent).
    assert box.fingerprint() == fp
    box.exec("echo changed >> data/x.txt; echo done")
    changed = box.fingerprint()
    assert {k for k in fp.parts if fp.parts[k] != changed.parts.get(k)} == {"file:data/x.txt"}


def test_fingerprint_excludes_bytecode_caches_and_is_the_same_on_both_backends(box):
    box.write_file("m.py", "X = 1\n")
    box.exec("mkdir __pycache__ && echo junk > __pycache__/m.cpython-311.pyc && echo junk > stray.pyc && echo done")
    fp = box.fingerprint()
    assert not [k for k in fp.parts if "pycache" in k or k.endswith(".pyc")]
    assert EXCLUDE == ("__pycache__", "*.pyc") and NORMALISER_VERSION.startswith("sandbox-workspace/")
    # The same listing and command output give the same digest whatever backend produced them.
    assert fp == compose_fingerprint(box.listing(), box.last_exec)


def test_the_same_work_fingerprints_the_same_on_both_backends(docker_ok, local_sandbox_ok):
    # Two real sandboxes, one per backend, do the same work: their workspaces and last commands must
    # fingerprint identically, part for part, or a seed recorded on one would drift on the other.
    fingerprints = {}
    for name in ("local", "docker"):
        sandbox = open_sandbox(name, FAST)
        try:
            sandbox.write_file("pkg/m.py", "X = 1\n")
            sandbox.exec(
                "mkdir -p out __pycache__ && echo junk > __pycache__/m.cpython-311.pyc && printf 'a\\nb\\n' > out/t.txt"
            )
            sandbox.exec(["python3", "-c", "import sys; sys.path.insert(0, 'pkg'); import m; print(m.X + 1)"])
            fingerprints[name] = sandbox.fingerprint()
        finally:
            sandbox.close()
    assert fingerprints["local"].parts == fingerprints["docker"].parts
    assert fingerprints["local"] == fingerprints["docker"]


def test_local_host_paths_never_reach_the_model():
    with LocalSandbox(FAST) as box:
        result = box.exec("pwd; echo $TMPDIR; python3 -c 'import os; print(os.getcwd()); open(\"/nonexistent/x\")'")
        assert box.workspace_path not in result.stdout + result.stderr
        assert result.stdout.splitlines()[:3] == ["/workspace", "/tmp", "/workspace"]


def test_output_is_capped_and_file_size_is_limited(box):
    big = box.exec("yes | head -c 200000")
    assert big.truncated and len(big.stdout) == FAST.output_limit
    huge = box.exec("head -c 40000000 /dev/zero > big.bin; ls -l big.bin | cut -d' ' -f5")
    assert "File size limit exceeded" in huge.stderr
    assert int(huge.stdout.split()[0]) == FAST.file_size_mb * 1024 * 1024


def test_workspace_holds_no_more_than_workspace_mb(box):
    """Three files under the per-file limit but over the workspace size: the workspace fills, the host does not."""
    filled = box.exec("for i in 1 2 3; do head -c 30000000 /dev/zero > fill$i.bin; done; du -sk . | cut -f1")
    assert "No space left on device" in filled.stderr
    assert int(filled.stdout.split()[-1]) <= FAST.workspace_mb * 1024
    box.exec("rm -f fill*.bin")
    box.write_file("after.txt", "space again")
    assert box.read_file("after.txt") == b"space again"


def test_docker_keeps_no_log_of_what_the_sandbox_said(docker_ok):
    """Every reply of the server (command output, file contents) passes through the container's stdout:
    with the log driver off the engine stores none of it on the host."""
    import docker

    with DockerSandbox(FAST) as box:
        secret = uuid.uuid4().hex
        box.exec(f"echo {secret}")
        client = docker.from_env()
        try:
            container = client.containers.get(box.container_id)
            assert container.attrs["HostConfig"]["LogConfig"]["Type"] == "none"
            with pytest.raises(docker.errors.APIError, match="logging driver"):
                container.logs()
        finally:
            client.close()


# -- escapes ---------------------------------------------------------------------------------------


def test_network_is_unreachable_even_the_hosts_loopback(box):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(3)
    port = server.getsockname()[1]
    try:
        probe = box.exec(
            ["python3", "-"],
            stdin=(
                f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n   "
                " print('CONNECTED')\nexcept OSError as e:\n    print('refused', e.errno)\n"
            ),
        )
        assert probe.stdout.startswith("refused"), probe
        with pytest.raises(socket.timeout):
            server.accept()  # nothing from the sandbox ever arrived at the host's loopback
    finally:
        server.close()
    routes = box.exec("tail -n +2 /proc/net/route; tail -n +3 /proc/net/dev | cut -d: -f1")
    assert routes.stdout.split() == ["lo"], routes  # no route to anywhere, no interface but loopback
    assert box.network_isolated


def test_infinite_loop_is_killed_at_its_timeout(box):
    started = time.monotonic()
    result = box.exec("python3 -c 'while True: pass'", timeout=2)
    elapsed = time.monotonic() - started
    assert result.timed_out and result.exit_code == 137
    assert 2.0 <= elapsed < 6.0
    assert not _leftovers(box)
    assert box.exec("echo alive").stdout == "alive\n"


def test_background_and_setsid_processes_die_with_their_command(box):
    result = box.exec(
        "trap '' TERM HUP; (setsid sleep 1000 &); (sleep 1000 &); nohup sleep 1000 >/dev/null 2>&1 & echo started"
    )
    assert result.stdout == "started\n"
    time.sleep(0.2)
    assert not _leftovers(box)


def test_commands_cannot_kill_or_reach_the_sandbox_itself(box):
    """A command may kill itself, never the sandbox's server (PID 1 of the sandbox, on both backends)."""
    box.exec("kill -9 -1; kill -KILL 1; kill -TERM 1; kill -INT 1; echo done")
    probe = box.exec("ls /proc/1/fd")
    assert "Permission denied" in probe.stderr  # the server is not dumpable: its channel is out of reach
    if isinstance(box, DockerSandbox):
        assert box.alive()
    assert box.exec("echo alive").stdout == "alive\n"


FORK_COUNTER = """
import os, time
children = 0
try:
    for _ in range(10 * {limit}):
        if os.fork() == 0:
            time.sleep(3)
            os._exit(0)
        children += 1
    print("never refused", children)
except OSError as exc:
    print("refused after", children, exc.errno)
"""


def test_fork_bomb_is_contained(box):
    # The pids limit itself, counted: forks are refused once the sandbox holds `pids` processes (its
    # server, the shell and python among them), whether or not anything times out.
    limit = box.limits.pids
    counted = box.exec(["python3", "-c", FORK_COUNTER.format(limit=limit)], timeout=30)
    words = counted.stdout.split()
    assert words[:2] == ["refused", "after"], counted.stdout + counted.stderr
    assert 0 < int(words[2]) < limit and int(words[3]) == errno.EAGAIN
    # A real bomb: the same limit stops it, nothing outlives its command, and the sandbox still works.
    box.exec("bomb() { bomb | bomb & }; bomb; sleep 2; echo host-still-fine", timeout=5)
    time.sleep(0.2)
    assert not _leftovers(box)
    assert box.exec("echo alive").stdout == "alive\n"


def test_memory_hog_is_contained(box):
    gradual = box.exec(["python3", "-c", "x = []\nwhile True: x.append(bytearray(10**7))"], timeout=20)
    assert gradual.exit_code != 0 and not gradual.timed_out
    assert "MemoryError" in gradual.stderr
    at_once = box.exec("python3 -c 'x = bytearray(8 * 1024**3)'")
    assert at_once.exit_code == 1 and "MemoryError" in at_once.stderr
    assert box.exec("echo alive").stdout == "alive\n"


def test_docker_host_filesystem_is_untouched(docker_ok, tmp_path_factory):
    marker_dir = tmp_path_factory.mktemp("host-marker")
    marker = marker_dir / f"failforge-marker-{uuid.uuid4().hex}"
    marker.write_text("host original")
    with DockerSandbox(FAST) as box:
        result = box.exec(
            f"echo x > /evil; echo x > /etc/evil; echo x > /usr/evil; cat {marker}; echo x > {marker}; ls {marker_dir};"
            " touch /tmp/private && echo tmp-is-private-tmpfs"
        )
        assert result.stderr.count("Read-only file system") >= 3, result.stderr
        assert "No such file or directory" in result.stderr and "host original" not in result.stdout
        assert "tmp-is-private-tmpfs" in result.stdout
        assert box.exec("id -u; cat /proc/self/status | grep CapEff").stdout.split() == [
            str(box.uid),
            "CapEff:",
            "0000000000000000",
        ]
    assert marker.read_text() == "host original"
    assert not os.path.exists("/evil") and not os.path.exists("/etc/evil") and not os.path.exists("/usr/evil")


def test_local_commands_run_unprivileged_and_see_no_host_files(tmp_path):
    marker = tmp_path / "marker"
    marker.write_text("host original")
    os.chmod(tmp_path, 0o755)
    with LocalSandbox(FAST) as box:
        result = box.exec(
            f"id -u; echo x > /etc/evil; echo x > /usr/evil; echo x > /evil; cat {marker}; echo x > {marker}; ls /root"
            " /home /run /sys"
        )
        assert result.stdout.split() == ["65534"]  # the uid commands see; on the host it is box.uid
        assert result.stderr.count("Read-only file system") == 3, result.stderr
        assert result.stderr.count("No such file or directory") >= 5, (
            result.stderr
        )  # the marker twice, /root, /home, /run, /sys
        assert os.stat(f"/proc/{box.server_pid}").st_uid == box.uid != 0
        limits = box.exec("grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/self/status")
        assert limits.stdout.split() == ["CapEff:", "0000000000000000", "NoNewPrivs:", "1", "Seccomp:", "2"], limits
    assert marker.read_text() == "host original"
    assert not os.path.exists("/etc/evil") and not os.path.exists("/usr/evil") and not os.path.exists("/evil")


def test_local_sandbox_lives_in_a_cgroup_with_total_limits_and_leaves_nothing():
    with LocalSandbox(FAST) as box:
        group = box._cgroup
        assert group is not None
        members = set(group.pids())
        assert box.server_pid in members and box._proc is not None and box._proc.pid in members
        memory, pids = group.dirs["memory"], group.dirs["pids"]
        limit_file = "memory.max" if group.version == 2 else "memory.limit_in_bytes"
        with open(os.path.join(memory, limit_file)) as handle:
            assert int(handle.read()) == FAST.total_memory_bytes()
        with open(os.path.join(pids, "pids.max")) as handle:
            assert int(handle.read()) == FAST.pids
        uid = box.uid
    assert not os.path.exists(memory) and not os.path.exists(pids)
    assert not [pid for pid in filter(str.isdigit, os.listdir("/proc")) if _uid_of(pid) == uid]


def _uid_of(pid: str) -> int | None:
    """The uid of a live process (a zombie runs nothing and counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            if handle.read().rsplit(b")", 1)[-1].split()[0] == b"Z":
                return None
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


# -- infrastructure --------------------------------------------------------------------------------


def test_dead_container_is_infrastructure_error_not_drift(docker_ok):
    import docker

    box = DockerSandbox(FAST)
    try:
        client = docker.from_env()
        client.containers.get(box.container_id).kill()
        client.close()
        with pytest.raises(InfrastructureError, match="container"):
            box.exec("echo hi")
        assert not box.alive()
    finally:
        box.close()
    with pytest.raises(InfrastructureError, match="closed"):
        box.exec("echo hi")


def test_unreachable_engine_and_missing_image_are_infrastructure_errors(docker_ok, monkeypatch):
    with pytest.raises(InfrastructureError, match="image"):
        DockerSandbox(FAST, image="failforge-sandbox:does-not-exist")
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/failforge-docker.sock")
    with pytest.raises(InfrastructureError, match="not reachable"):
        DockerSandbox(FAST)
    row = sandbox_doctor(backends=("docker",))[0]
    assert not row.works and "not reachable" in row.why


def test_containers_are_removed_after_close(docker_ok):
    import docker

    box = DockerSandbox(FAST)
    cid = box.container_id
    box.close()
    client = docker.from_env()
    try:
        with pytest.raises(docker.errors.NotFound):
            client.containers.get(cid)
    finally:
        client.close()


def test_doctor_reports_both_backends():
    rows = {row.backend: row for row in sandbox_doctor(backends=("local",))}
    assert rows["local"].works and "bubblewrap" in rows["local"].why and "cgroup v" in rows["local"].why
    with pytest.raises(ConfigError):
        sandbox_doctor(backends=("vm",))  # type: ignore[arg-type]


def test_doctor_docker_row(docker_ok):
    row = sandbox_doctor(backends=("docker",))[0]
    assert row.works and "network none" in row.why


def test_local_refuses_to_run_without_bubblewrap_and_says_so(tmp_path, monkeypatch):
    """Without bwrap on the PATH the backend does not fall back to something weaker: it refuses, and the
    doctor names what is missing and how to install it."""
    import shutil

    from failforge.environments.sandbox import local_isolation

    os.symlink(shutil.which("setpriv"), tmp_path / "setpriv")
    monkeypatch.setenv("PATH", str(tmp_path))
    try:
        iso = local_isolation(refresh=True)
        assert not iso.works and "bubblewrap is not installed: apt-get install bubblewrap" in iso.summary()
        with pytest.raises(InfrastructureError, match="cannot isolate"):
            LocalSandbox(FAST)
        row = sandbox_doctor(backends=("local",))[0]
        assert not row.works and "bubblewrap is not installed" in row.why
    finally:
        monkeypatch.undo()
        assert local_isolation(refresh=True).works
