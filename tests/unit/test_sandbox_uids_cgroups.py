"""Uid leases and the cgroup probe, on real locks and real (temporary) directories."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from failforge.environments.sandbox._cgroup import (
    JOIN_SCRIPT,
    CgroupSupport,
    _probe_v1,
    _probe_v2,
    sweep_stale_groups,
)
from failforge.environments.sandbox._uids import lease_uid, range_conflicts, uid_range
from failforge.errors import ConfigError, InfrastructureError


@pytest.fixture()
def small_range(monkeypatch):
    monkeypatch.setenv("FAILFORGE_SANDBOX_UIDS", "1879048192:3")


def test_leases_are_distinct_and_come_back(tmp_path, small_range):
    leases = [lease_uid(str(tmp_path)) for _ in range(3)]
    assert len({lease.uid for lease in leases}) == 3
    with pytest.raises(InfrastructureError, match="all 3 sandbox uids"):
        lease_uid(str(tmp_path))
    leases[1].release()
    again = lease_uid(str(tmp_path))
    assert again.uid == leases[1].uid
    for lease in leases + [again]:
        lease.release()


def test_a_lease_held_by_a_killed_process_is_free_again(tmp_path, small_range):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time; from failforge.environments.sandbox._uids import lease_uid; "
                "print(lease_uid(sys.argv[1]).uid, flush=True); time.sleep(60)"
            ),
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert holder.stdout is not None
    held = int(holder.stdout.readline())
    mine = lease_uid(str(tmp_path))
    assert mine.uid != held
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    others = [lease_uid(str(tmp_path)) for _ in range(2)]
    assert held in {lease.uid for lease in others}
    for lease in others + [mine]:
        lease.release()


def test_uid_range_is_configurable_and_checked(monkeypatch):
    assert uid_range() == range(0x70000000, 0x70000000 + 512)
    monkeypatch.setenv("FAILFORGE_SANDBOX_UIDS", "0x7000:10")
    assert uid_range() == range(0x7000, 0x7000 + 10)
    for bad in ("12", "10:5", "abc:def"):
        monkeypatch.setenv("FAILFORGE_SANDBOX_UIDS", bad)
        with pytest.raises(ConfigError, match="FAILFORGE_SANDBOX_UIDS"):
            uid_range()


def test_range_conflicts_name_real_accounts():
    assert range_conflicts(range(1)) == ["root (0)"]
    assert range_conflicts(uid_range()) == []


def test_cgroup_v1_probe_names_a_missing_controller(tmp_path):
    memory, cpu = tmp_path / "memory", tmp_path / "cpu"
    (memory / "me").mkdir(parents=True)
    cpu.mkdir()
    mounts = [(str(memory), "cgroup", {"rw", "memory"}), (str(cpu), "cgroup", {"rw", "cpu"})]
    support = _probe_v1(mounts, {"memory": "/me", "cpu": "/"})
    assert not support.usable and support.problems == ("cgroup v1: no pids hierarchy is mounted",)
    pids = tmp_path / "pids"
    pids.mkdir()
    support = _probe_v1(mounts + [(str(pids), "cgroup", {"pids"})], {"memory": "/me", "cpu": "/"})
    assert support.usable and support.parents == {"memory": str(memory / "me"), "pids": str(pids), "cpu": str(cpu)}


def test_stale_groups_are_removed_only_when_no_live_sandbox_holds_their_uid(tmp_path):
    parents = {c: str(tmp_path / c) for c in ("memory", "pids", "cpu")}
    for parent in parents.values():
        for uid in (5, 6):
            os.makedirs(os.path.join(parent, f"failforge-sandbox-uid-{uid}"))
        os.makedirs(os.path.join(parent, "someone-else"))
    released = []
    sweep_stale_groups(
        CgroupSupport(1, parents=parents), lambda uid: (lambda: released.append(uid)) if uid == 5 else None
    )
    assert released == [5]
    for parent in parents.values():
        assert sorted(os.listdir(parent)) == ["failforge-sandbox-uid-6", "someone-else"]


def test_cgroup_v2_probe_names_missing_controllers(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpu hugetlb\n")
    support = _probe_v2([(str(tmp_path), "cgroup2", {"rw"})], {"": "/"})
    assert not support.usable and "lacks the memory, pids controller(s)" in support.problems[0]
    assert "no cgroup2 filesystem" in _probe_v2([], {}).problems[0]


def test_join_script_writes_its_pid_everywhere_then_runs_the_command(tmp_path):
    files = [tmp_path / "a", tmp_path / "b"]
    done = subprocess.run(
        ["/bin/sh", "-c", JOIN_SCRIPT, "x", *map(str, files), "--", "/bin/sh", "-c", "echo $$"],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = done.stdout.strip()
    assert [f.read_text().strip() for f in files] == [pid, pid]  # the same process, before it ran the command
    failed = subprocess.run(
        ["/bin/sh", "-c", JOIN_SCRIPT, "x", str(tmp_path / "missing" / "f"), "--", "true"],
        capture_output=True,
        check=False,
    )
    assert failed.returncode == 125
