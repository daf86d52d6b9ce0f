"""Issue 37: the cases of a hostile agent and a hostile dataset that need real processes or the whole CLI.

A real external agent command (failforge's own ``record`` with ``--agent-cmd``) that reads its
environment and whose upstream echoes the key; agent commands that leave a ``setsid`` daemon behind, under
a failforge that ends normally or is SIGKILLed; a process-executor driver SIGKILLed while its workers
swallow the stop, several times over; dataset files that are FIFOs, read by the CLI commands; a YAML
alias bomb and a dead judge through the CLI. The cases that need no heavy part are in
``tests/unit/test_hostile_issue37.py``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from failforge.testing import LoopbackModelServer

pytestmark = pytest.mark.timeout(600)
ROOT = Path(__file__).resolve().parents[2]
KEY = "ff-hostile-upstream-key-51c0a8e2d7"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return {**env, "PYTHONHASHSEED": "0", **extra}


def _cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "failforge", *args],
        cwd=cwd,
        env=env or _env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _running(marker: str) -> list[int]:
    """Pids of live (non-zombie) processes whose program (argv[0]) holds ``marker``: the test's named sleeps."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes().split(b"\0")[0].decode("utf-8", "replace")
            state = Path(entry.path, "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def _gone_within(marker: str, seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while _running(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _running(marker)


def _kill(marker: str) -> None:
    for pid in _running(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# --- the key reaches the agent; a key echoed by the upstream reaches the records -------------------------

SNOOP = textwrap.dedent('''
    """An agent that reads its whole environment, then calls the model once and writes its answer."""
    import json, os, sys
    import openai
    with open(sys.argv[1], "w") as out:
        json.dump(dict(os.environ), out)
    client = openai.OpenAI(
        base_url=os.environ["FAILFORGE_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"], max_retries=0
    )
    reply = client.chat.completions.create(
        model=os.environ["FAILFORGE_MODEL"], messages=[{"role": "user", "content": os.environ["FAILFORGE_TASK"]}]
    )
    with open(os.environ["FAILFORGE_OUTPUT"], "w") as out:
        out.write(reply.choices[0].message.content or "")
''')


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``failforge record agentdojo`` through a snooping agent command, against an upstream that echoes the key."""
    pytest.importorskip("agentdojo")
    tmp = tmp_path_factory.mktemp("record")
    (tmp / "snoop.py").write_text(SNOOP)

    def echo(body: dict[str, Any]) -> tuple[str, None]:
        return f"I cannot do that. By the way, your key is {KEY}.", None

    with LoopbackModelServer(policy=echo) as model:
        done = _cli(
            "record",
            "agentdojo",
            "--task",
            "banking/user_task_3",
            "--harness",
            "external",
            "--agent-cmd",
            f"{sys.executable} {tmp / 'snoop.py'} {tmp / 'env.json'}",
            "--base-url",
            model.base_url,
            "--model",
            "m",
            "--api-key-env",
            "FF_HOSTILE_KEY",
            "--keep-failures",
            "-o",
            "seeds.jsonl",
            cwd=tmp,
            env=_env(FF_HOSTILE_KEY=KEY),
        )
    yield {"dir": tmp, "done": done}


def test_the_agent_command_never_inherits_the_variable_named_by_api_key_env(recorded):
    done, tmp = recorded["done"], recorded["dir"]
    seen = json.loads((tmp / "env.json").read_text())
    assert "FAILFORGE_RUN_ID" in seen, (done.stdout, done.stderr[-2000:])
    assert "FF_HOSTILE_KEY" not in seen and not any(KEY in value for value in seen.values())
    assert seen["OPENAI_API_KEY"] == "failforge-boundary", "only the placeholder"
    assert "~" in seen["FAILFORGE_BASE_URL"].split("/runs/", 1)[1], "the run's URL carries its capability token"


def test_a_key_echoed_by_the_upstream_never_reaches_records_failures_or_the_console(recorded):
    done, tmp = recorded["done"], recorded["dir"]
    written = [p for p in tmp.glob("seeds*.jsonl")]
    assert written, (done.returncode, done.stdout, done.stderr[-2000:])
    assert any("your key is ***" in p.read_text() for p in written), "the echo is kept, masked"
    for text in [p.read_text() for p in written] + [done.stdout, done.stderr]:
        assert KEY not in text


# --- nothing outlives failforge ------------------------------------------------------------------------

DAEMONIZING = textwrap.dedent("""
    #!/bin/sh
    # a plain child in the group, and a setsid double-forked daemon out of it (each a sleep named for the test)
    SLEEP-child 300 &
    setsid sh -c 'SLEEP-daemon 300 & exit 0' &
    echo ready > "$1"
    exec SLEEP-main 300
""").lstrip()


def _sleeper(tmp_path: Path, marker: str) -> str:
    """A path prefix for sleep under names that hold ``marker`` (``<prefix>-child`` etc.), to find them in /proc."""
    for role in ("child", "daemon", "main"):
        link = tmp_path / f"{marker}-{role}"
        if not link.exists():
            link.symlink_to("/bin/sleep")
    return str(tmp_path / marker)


def _daemonizing(tmp_path: Path, marker: str) -> Path:
    script = tmp_path / "agent.sh"
    script.write_text(DAEMONIZING.replace("SLEEP", _sleeper(tmp_path, marker)))
    script.chmod(0o755)
    return script


def test_a_setsid_daemon_of_the_agent_ends_when_the_run_ends(tmp_path):
    from failforge.harnesses._process import spawn, stop_group

    marker = f"ff37-{os.getpid()}-run"
    try:
        ready = tmp_path / "ready"
        process = spawn(
            [str(_daemonizing(tmp_path, marker)), str(ready)],
            env=dict(os.environ),
            cwd=None,
            stdout=tmp_path / "out.log",
            stderr=tmp_path / "err.log",
        )
        deadline = time.monotonic() + 30
        while len(_running(marker)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_running(marker)) == 3, _running(marker)
        stop_group(process)
        assert _gone_within(marker, 5) == [], "the daemon outlived the run"
    finally:
        _kill(marker)


def test_an_agent_that_exits_leaves_no_daemon_behind(tmp_path):
    from failforge.harnesses._process import spawn, stop_group

    marker = f"ff37-{os.getpid()}-exit"
    script = tmp_path / "quick.sh"
    script.write_text(
        f"#!/bin/sh\nsetsid sh -c '{_sleeper(tmp_path, marker)}-daemon 300 & exit 0' &\nsleep 0.3\nexit 3\n"
    )
    script.chmod(0o755)
    try:
        process = spawn(
            [str(script)], env=dict(os.environ), cwd=None, stdout=tmp_path / "out.log", stderr=tmp_path / "err.log"
        )
        assert process.wait(timeout=30) == 3, "the command's own exit status"
        stop_group(process)
        assert _gone_within(marker, 5) == []
    finally:
        _kill(marker)


def test_an_agent_that_kills_its_own_supervisor_still_leaves_no_daemon(tmp_path):
    """Found in the second hostile pass: a command can SIGKILL the supervisor (its parent, same user) before
    the run ends; its daemon is then found by the mark every process of the command inherits."""
    from failforge.harnesses._process import spawn, stop_group

    marker = f"ff37-{os.getpid()}-parricide"
    sleeper = _sleeper(tmp_path, marker)
    script = tmp_path / "parricide.sh"
    script.write_text(
        f"#!/bin/sh\nsetsid sh -c '{sleeper}-daemon 300 & exit 0' &\nsleep 0.3\nkill -9 $PPID\nexec {sleeper}-main"
        " 300\n"
    )
    script.chmod(0o755)
    try:
        process = spawn(
            [str(script)], env=dict(os.environ), cwd=None, stdout=tmp_path / "out.log", stderr=tmp_path / "err.log"
        )
        assert process.wait(timeout=30) == -signal.SIGKILL, "the supervisor was killed by the command"
        assert _running(marker), "the daemon is up"
        stop_group(process)
        assert _gone_within(marker, 5) == []
    finally:
        _kill(marker)


DRIVER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from failforge.harnesses._process import spawn
    folder = Path(sys.argv[1])
    spawn(
        [sys.argv[2], str(folder / "ready")],
        env=dict(os.environ), cwd=None, stdout=folder / "out.log", stderr=folder / "err.log",
    )
    time.sleep(600)
""")


def test_a_sigkilled_failforge_leaves_no_agent_process_and_no_daemon(tmp_path):
    marker = f"ff37-{os.getpid()}-kill"
    (tmp_path / "driver.py").write_text(DRIVER)
    try:
        driver = subprocess.Popen(
            [sys.executable, str(tmp_path / "driver.py"), str(tmp_path), str(_daemonizing(tmp_path, marker))],
            env=_env(PYTHONPATH=os.environ.get("PYTHONPATH") or str(ROOT / "src")),
        )
        deadline = time.monotonic() + 30
        while len(_running(marker)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_running(marker)) == 3, _running(marker)
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=30)
        assert _gone_within(marker, 5) == [], "the agent's processes outlived a SIGKILLed failforge"
    finally:
        _kill(marker)


POOL_DRIVER = textwrap.dedent('''
    import os, sys, time
    from pathlib import Path
    from failforge.jobs import init_worker, process_pool

    def stubborn(i):
        """A job that swallows every stop it is given (the worst a job can do)."""
        Path(f"started-{os.getpid()}").write_text("")
        while True:
            try:
                time.sleep(60)
            except BaseException:
                pass

    if __name__ == "__main__":
        pool = process_pool(2, init_worker, (os.getpid(),))
        futures = [pool.submit(stubborn, i) for i in range(3)]
        while len(list(Path().glob("started-*"))) < 2:  # both workers inside a job
            time.sleep(0.05)
        print("ready", flush=True)
        time.sleep(600)
''')


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                ppid = int(Path(entry.path, "stat").read_text().rsplit(")", 1)[-1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pids: set[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X"):
            alive.append(pid)
    return sorted(alive)


@pytest.mark.parametrize("attempt", range(4))
def test_a_sigkilled_process_executor_driver_leaves_no_worker_or_forkserver_every_time(tmp_path, attempt):
    (tmp_path / "pool_driver.py").write_text(POOL_DRIVER)
    driver = subprocess.Popen(
        [sys.executable, str(tmp_path / "pool_driver.py")],
        cwd=tmp_path,
        env=_env(PYTHONPATH=os.environ.get("PYTHONPATH") or str(ROOT / "src")),
        stdout=subprocess.PIPE,
        text=True,
    )
    spawned: set[int] = set()
    try:
        assert driver.stdout is not None and driver.stdout.readline().strip() == "ready"
        spawned = _descendants(driver.pid)
        workers = {int(p.name.split("-", 1)[1]) for p in tmp_path.glob("started-*")}
        assert workers <= spawned and len(_alive(spawned)) >= 4, (
            "the forkserver, the resource tracker and both workers, in their jobs"
        )
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=30)
        started = time.monotonic()
        while _alive(spawned) and time.monotonic() - started < 8:
            time.sleep(0.1)
        assert not _alive(spawned), (
            f"still running 8 s after the driver was killed: {_alive(spawned)} of {sorted(spawned)}"
        )
    finally:
        for pid in _alive(spawned):
            os.kill(pid, signal.SIGKILL)
        if driver.poll() is None:
            driver.kill()


# --- dataset files that hang -----------------------------------------------------------------------


def _image_dataset(folder: Path) -> tuple[Path, str]:
    """A seed file whose first step names one image, with that image's file a FIFO."""
    from failforge.trajectory import load_jsonl

    bundled = ROOT / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"
    seeds, _ = load_jsonl(bundled)
    digest = "ab" * 32
    seed = seeds[0]
    steps = [seed.steps[0].model_copy(update={"images": [digest]}), *seed.steps[1:]]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "images").mkdir()
    os.mkfifo(folder / "images" / f"{digest}.png")
    path = folder / "seeds.jsonl"
    path.write_text(
        seed.model_copy(update={"steps": steps}).model_dump_json() + "\n" + seeds[1].model_dump_json() + "\n"
    )
    return path, digest


def test_a_fifo_image_in_a_dataset_does_not_hang_replay_report_export_or_show(tmp_path):
    path, digest = _image_dataset(tmp_path / "data")
    env = _env(FAILFORGE_IMAGE_DIR=str(tmp_path / "store"))
    runs = {
        "replay": _cli("replay", str(path), cwd=tmp_path, env=env, timeout=120),
        "export": _cli(
            "export", str(path), "-f", "whowhen", "-o", str(tmp_path / "out"), cwd=tmp_path, env=env, timeout=120
        ),
        "show": _cli(
            "show",
            "nothing-by-this-id",
            "--dataset",
            str(tmp_path / "data"),
            "--seeds",
            str(path),
            cwd=tmp_path,
            env=env,
            timeout=120,
        ),
        "report": _cli("report", str(tmp_path / "data"), cwd=tmp_path, env=env, timeout=120),
    }
    for name, done in runs.items():
        assert "Traceback" not in done.stderr, (name, done.stderr[-1500:])
    replayed = runs["replay"]
    assert "a FIFO, not a regular file" in replayed.stdout + replayed.stderr, replayed.stdout + replayed.stderr
    assert "1/1 seeds replayed identically" in " ".join((replayed.stdout + replayed.stderr).split()), (
        "the rest of the dataset is used"
    )


# --- configs and counts ----------------------------------------------------------------------------

BOMB = (
    "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 9) if p else ', '.join(['lol'] * 9)}]\n"
        for p, c in zip(["", *"abcdefg"], "abcdefgh", strict=True)
    )
    + f"runs: [{', '.join(['*h'] * 9)}]\n"
)


def test_a_yaml_alias_bomb_as_methods_config_is_rc_2_and_one_line(tmp_path):
    (tmp_path / "bomb.yaml").write_text(BOMB)
    records = ROOT / "tests" / "fixtures" / "attribution" / "failforge_gold.jsonl"
    done = _cli("attribute", str(records), "--methods-config", "bomb.yaml", "-o", "out", cwd=tmp_path, timeout=60)
    assert done.returncode == 2, (done.returncode, done.stdout[-500:], done.stderr[-1500:])
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr[-1500:]
    assert "aliases" in done.stderr


def test_decide_against_a_dead_judge_never_prints_negative_counts_and_exits_1_after_skipping(tmp_path, bundled_seeds):
    import socket

    from failforge.judgement import adjudicate
    from failforge.trajectory import Outcome

    seed = bundled_seeds[3]
    steps = [
        *seed.steps[:-1],
        seed.steps[-1].model_copy(
            update={"content": "That transfer is not something I'll do for you.", "tool_calls": []}
        ),
    ]
    run = seed.model_copy(
        update={
            "steps": steps,
            "outcome": Outcome(success=False, evaluator="agentdojo.utility", details={"suite": "banking"}),
        }
    )
    run = run.model_copy(update={"adjudication": adjudicate(run)})
    (tmp_path / "runs.jsonl").write_text(
        run.model_dump_json() + "\n" + run.model_copy(update={"id": run.id + "-2"}).model_dump_json() + "\n"
    )
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{unused.getsockname()[1]}/v1"
    done = _cli(
        "decide",
        "runs.jsonl",
        "--base-url",
        dead,
        "--model",
        "judge",
        "--api-key-env",
        "NO_SUCH_KEY",
        "-o",
        "out.jsonl",
        cwd=tmp_path,
        env=_env(COLUMNS="250"),
        timeout=300,
    )
    summary = " ".join(done.stdout.split())
    assert done.returncode == 1 and "0 live judge calls, 0 replayed" in summary and "2 not judged" in summary, (
        done.stdout,
        done.stderr[-800:],
    )
    assert not any(token.startswith("-") and token[1:].isdigit() for token in summary.split()), summary
    # a bad line skipped: exit 1, as `import` (the good records are written)
    (tmp_path / "mixed.jsonl").write_text(run.model_dump_json() + "\n{torn line\n")
    with LoopbackModelServer(policy=lambda body: ('STATE: refuse\nEVIDENCE: "not something I\'ll do"', None)) as judge:
        mixed = _cli(
            "decide",
            "mixed.jsonl",
            "--base-url",
            judge.base_url,
            "--model",
            "judge",
            "--api-key-env",
            "NO_SUCH_KEY",
            "-o",
            "mixed.out.jsonl",
            cwd=tmp_path,
            env=_env(COLUMNS="250"),
            timeout=300,
        )
    assert (
        mixed.returncode == 1
        and "1 skipped" in " ".join(mixed.stdout.split())
        and (tmp_path / "mixed.out.jsonl").is_file()
    ), mixed.stdout
