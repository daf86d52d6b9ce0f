"""A pooled sandbox, reset after a run, cannot be told from a freshly opened one; what cannot be reset is not reused.

The probe is what a command can read of its sandbox, run as the first command after opening and
after each reset: its own PID and its children's, uid and groups, hostname, umask, working
directory, rlimits, environment, every writable mount's tree with inode numbers, modes, link counts,
sizes and owners, each mount's free blocks and inodes, the process list, System V IPC, sockets,
the mount table (mount ids and device numbers, which differ between any two fresh sandboxes, left
out) and, on docker, the cgroup files the container can read. Host side: the uid lease is still
held, the cgroup has the same limits and only the server in it. Real engine, real kernel.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from failforge.environments.sandbox import (
    DockerSandbox,
    LocalSandbox,
    Sandbox,
    SandboxLimits,
    acquire_sandbox,
    close_pooled_sandboxes,
    pooled_count,
    release_sandbox,
    sandbox_pool,
)
from failforge.environments.sandbox._reuse import cgroup_dirs_of
from failforge.environments.sandbox._uids import try_lease

pytestmark = pytest.mark.timeout(600)

LIMITS = SandboxLimits(command_timeout=20.0)
IMAGE = "failforge-sandbox:bookworm"

PROBE = r"""
echo "pid $$"; python3 -c 'import os; print("child", os.getpid())'
id; hostname; umask; pwd; ulimit -a; env | sort
for d in /workspace /tmp /var/tmp /dev/shm /dev/mqueue; do
  [ -d "$d" ] || continue
  echo "== $d $(stat -f -c %T "$d")"
  # Inode numbers and free space of the sandbox's own tmpfs mounts (not of the host's disk or the
  # kernel-wide mqueue inode counter, which differ between any two fresh sandboxes).
  if [ "$(stat -f -c %T "$d")" = tmpfs ]; then
    find "$d" -xdev -printf '%p %i %m %n %s %u %g %y\n' | sort
    stat -f -c "blocks %b free %f avail %a inodes %c ifree %d" "$d"
  else
    find "$d" -xdev -printf '%p %m %n %s %u %g %y\n' | sort
  fi
done
echo "== proc"; cd /proc && echo [0-9]*; cd /workspace
echo "== ipc"; cat /proc/sysvipc/shm /proc/sysvipc/sem /proc/sysvipc/msg
echo "== net"; for t in tcp tcp6 udp udp6 raw raw6 unix; do cat /proc/net/$t; done
echo "== mounts"; sed -E 's/^[0-9]+ [0-9]+ [0-9]+:[0-9]+ //' /proc/self/mountinfo | sort
echo "== cgroup"  # shell builtins only from here: no process comes and goes while counters are read
for f in memory/memory.limit_in_bytes memory/memory.memsw.limit_in_bytes memory/memory.failcnt \
         memory/memory.oom_control \
         pids/pids.max pids/pids.current pids/pids.events cpu/cpu.cfs_quota_us cpu/cpu.cfs_period_us \
         memory.max memory.swap.max memory.events pids.max pids.current pids.events pids.peak cpu.max; do
  [ -r "/sys/fs/cgroup/$f" ] || continue
  printf '%s:' "$f"
  while IFS= read -r line || [ -n "$line" ]; do printf ' %s' "$line"; done < "/sys/fs/cgroup/$f"
  echo
done
true
"""

#: Everything a run may leave that the reset must undo (sockets and IPC excepted: those refuse reuse).
DIRTY = r"""
set -e
mkdir -p /workspace/a/b/c /tmp/t /var/tmp/v 2>/dev/null || mkdir -p /workspace/a/b/c /tmp/t
for d in /workspace /workspace/a/b/c /tmp/t /dev/shm; do head -c 100000 /dev/urandom > "$d/blob"; done
[ -d /var/tmp/v ] && echo x > /var/tmp/v/file || true
ln -s /etc/passwd /workspace/link; mkfifo /tmp/fifo; touch /workspace/.hidden
mkdir /workspace/locked; touch /workspace/locked/inside; chmod 000 /workspace/locked
for i in $(seq 1 20); do (true) ; done
(sleep 30 &) ; setsid sleep 30 &
python3 -c 'import os; [os.rmdir(os.path.join("/tmp", n)) for n in []]; open("/dev/shm/sem.x", "w").write("1")'
cd /tmp && umask 077 && export LEFT=1 && echo ok
"""


def _normalise(text: str, box: Sandbox) -> str:
    """Probe text with the facts that differ between any two fresh sandboxes named, not compared: the
    sandbox's leased host uid, and (docker) its container id, layer links and mount peer groups in the mount table."""
    text = text.replace(str(box.uid), "<uid>")
    text = re.sub(r"/l/[A-Z0-9]{26}", "/l/<layer>", text)  # the image layer links docker makes per container
    text = re.sub(r"\b(master|shared):\d+", r"\1:<peer group>", text)  # host-wide mount peer group numbers
    return re.sub(r"[0-9a-f]{64}", "<container>", text)


def _relative_pids(text: str) -> str:
    """PIDs as offsets from the probe's own. Between two fresh docker containers the first command's PID
    varies (6, 7 or 8: the engine's own short-lived processes in the namespace); within one sandbox,
    fresh and reset, it must not, and there the probe is compared with its absolute PIDs."""
    lines = text.splitlines()
    base = int(lines[0].split()[1])
    out = []
    for line in lines:
        if line.startswith(("pid ", "child ")):
            name, value = line.split()
            line = f"{name} +{int(value) - base}"
        elif line and all(part.isdigit() for part in line.split()) and lines[lines.index(line) - 1] == "== proc":
            line = " ".join(part if part == "1" else f"+{int(part) - base}" for part in line.split())
        out.append(line)
    return "\n".join(out)


def _host_facts(box: Sandbox) -> dict[str, object]:
    """Host side: the uid lease is held, the cgroup has the fresh limits, nothing but the server runs in it."""
    facts: dict[str, object] = {"lease_held": try_lease(box.uid) is None}
    if isinstance(box, LocalSandbox):
        assert box._cgroup is not None
        dirs = {"memory": box._cgroup.dirs["memory"], "pids": box._cgroup.dirs["pids"], "cpu": box._cgroup.dirs["cpu"]}
    else:
        assert isinstance(box, DockerSandbox)
        found = cgroup_dirs_of(box._host_pid())
        dirs = {c: found.get(c) or found[""] for c in ("memory", "pids", "cpu")}
    for controller, directory in dirs.items():
        for name in ("memory.limit_in_bytes", "memory.max", "pids.max", "cpu.cfs_quota_us", "cpu.max"):
            try:
                with open(f"{directory}/{name}", encoding="ascii") as handle:
                    facts[f"{controller}/{name}"] = handle.read().strip()
            except OSError:
                pass
        with open(f"{directory}/cgroup.procs", encoding="ascii") as handle:
            facts[f"{controller}/processes"] = len(handle.read().split())
    return facts


def _probe(box: Sandbox) -> tuple[str, dict[str, object]]:
    result = box.exec(PROBE)
    assert result.exit_code == 0, result.stderr
    return _normalise(result.stdout, box), _host_facts(box)


@pytest.fixture(params=["local", "docker"])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    request.getfixturevalue("docker_ok" if request.param == "docker" else "local_sandbox_ok")
    close_pooled_sandboxes()  # what earlier tests in this process left idle is not this test's pool
    with sandbox_pool(1):
        yield request.param
        close_pooled_sandboxes()


def _acquire(backend: str) -> Sandbox:
    return acquire_sandbox(backend, LIMITS, image=IMAGE, python_hash_seed="0")


def test_a_reset_sandbox_probes_exactly_as_it_did_fresh(backend: str) -> None:
    box = _acquire(backend)
    fresh = _probe(box)
    release_sandbox(box)
    assert pooled_count() == 1
    again = _acquire(backend)
    assert again is box, "the pool did not hand back the released sandbox"
    assert _probe(again) == fresh
    dirty = again.exec(DIRTY)
    assert dirty.exit_code == 0 and dirty.stdout.strip().endswith("ok"), dirty.stderr
    release_sandbox(again)
    third = _acquire(backend)
    assert third is box
    assert third.fingerprint() == open_fingerprint(backend)
    after = _probe(third)
    assert after[0].splitlines() == fresh[0].splitlines()
    assert after[1] == fresh[1]
    release_sandbox(third)


def open_fingerprint(backend: str):
    """The sandbox fingerprint of a freshly opened sandbox with pooling off."""
    with sandbox_pool(0):
        box = _acquire(backend)
        try:
            return box.fingerprint()
        finally:
            release_sandbox(box)


def test_the_fresh_probe_of_a_pooled_sandbox_is_that_of_an_unpooled_one(backend: str) -> None:
    """Preparing a sandbox for reuse (reading its PID counter from the host) leaves nothing a command sees."""
    pooled = _acquire(backend)
    with sandbox_pool(0):
        plain = _acquire(backend)
        try:
            assert getattr(plain, "_fresh", None) is None
            plain_probe = _probe(plain)
        finally:
            release_sandbox(plain)
    pooled_probe = _probe(pooled)
    assert _relative_pids(pooled_probe[0]) == _relative_pids(plain_probe[0]) and pooled_probe[1] == plain_probe[1]
    if backend == "local":  # bubblewrap starts nothing but the server: the first command's PID is always 2
        assert pooled_probe[0] == plain_probe[0] and pooled_probe[0].startswith("pid 2\n")
    release_sandbox(pooled)


@pytest.mark.parametrize(
    "leftover",
    [
        (
            "python3 -c \"import socket; s = socket.socket(); s.bind(('127.0.0.1', 8123)); s.listen(); c ="
            " socket.create_connection(('127.0.0.1', 8123)); a, _ = s.accept(); c.close(); a.close()\""
        ),
        'python3 -c "import ctypes; assert ctypes.CDLL(None).shmget(0, 4096, 0o1600) >= 0"',
        # Processes each under the per-process limit, together over the cgroup's total: the kernel OOM-kills one.
        (
            "for i in 1 2 3 4 5; do python3 -c 'import time; x = bytearray(b\"1\") * (90 * 1024 * 1024); time.sleep(3)'"
            " & done; wait; true"
        ),
    ],
    ids=["socket-in-time-wait", "sysv-shared-memory", "oom-kill"],
)
def test_a_sandbox_that_keeps_what_a_reset_cannot_undo_is_closed_not_reused(backend: str, leftover: str) -> None:
    limits = LIMITS if "bytearray" not in leftover else LIMITS.model_copy(update={"memory_mb": 128})
    box = acquire_sandbox(backend, limits, image=IMAGE, python_hash_seed="0")
    fresh = _probe(box)[0]
    box.exec(leftover)
    release_sandbox(box)
    assert pooled_count() == 0
    assert box.alive() is False
    other = acquire_sandbox(backend, limits, image=IMAGE, python_hash_seed="0")
    try:
        assert other is not box
        assert _relative_pids(_probe(other)[0]) == _relative_pids(fresh)  # a fresh sandbox, as the first one was
    finally:
        release_sandbox(other)


def test_sandboxes_of_another_kind_are_never_handed_out(backend: str) -> None:
    box = _acquire(backend)
    release_sandbox(box)
    other = acquire_sandbox(backend, LIMITS.model_copy(update={"pids": 65}), image=IMAGE, python_hash_seed="0")
    try:
        assert other is not box and other.limits.pids == 65
        seeded = acquire_sandbox(backend, LIMITS, image=IMAGE, python_hash_seed="1")
        assert seeded is not box
        release_sandbox(seeded)
    finally:
        release_sandbox(other)
