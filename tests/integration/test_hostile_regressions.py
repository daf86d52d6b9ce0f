"""Regressions of the defects an independent hostile test found (issue 19, item 10), and terminal output (item 8).

Each test drives failforge the way the hostile tester did (mostly through the CLI, in a subprocess
whose stdout and stderr are pipes, as in a log) and checks the behaviour that replaced the defect: a
one-line error and exit code 2 instead of a traceback, no key on the terminal, no orphaned process,
one line per attempt, a prefix copied byte for byte.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"


def _env(**extra: str) -> dict[str, str]:
    """The CLI's environment as a log or a pipe gives it: no COLUMNS (rich falls back to 80 columns)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return {**env, "PYTHONHASHSEED": "0", **extra}


def _cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "failforge", *args],
        cwd=cwd,
        env=env or _env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit 2, no traceback, and the error as the last line of stderr, whole (not folded at 80 columns)."""
    assert result.returncode == 2, (result.returncode, result.stdout[-500:], result.stderr[-1500:])
    assert "Traceback" not in result.stderr + result.stdout, result.stderr[-1500:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and result.stderr.rstrip("\n").splitlines()[-1] == lines[0], result.stderr[-1500:]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# --- bad input: one-line errors -----------------------------------------------------------------


def test_a_campaign_file_nested_3000_levels_deep_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "arrays.toml").write_text(f'seeds = ["s.jsonl"]\noutput = "o"\nplan = {"[" * 3000}{"]" * 3000}\n')
    (tmp_path / "tables.toml").write_text(f'seeds = ["s.jsonl"]\noutput = "o"\nplan = {"{a=" * 3000}1{"}" * 3000}\n')
    for name in ("arrays.toml", "tables.toml"):
        _one_line_error(_cli("generate", name, cwd=tmp_path), name, "nested too deeply")
    assert not (tmp_path / "o").exists()


def test_an_output_path_under_a_regular_file_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "some_file").write_text("x")
    gold = ROOT / "tests" / "fixtures" / "attribution" / "failforge_gold.jsonl"
    cases = [
        (
            (
                "generate",
                "--seeds",
                str(BUNDLED),
                "-o",
                "some_file/x",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
            ),
            "some_file is a file, not a folder",
        ),
        (
            ("import", str(gold), "-f", "failforge", "-o", "some_file/records.jsonl"),
            "some_file is a file, not a folder",
        ),
        (("export", str(gold), "-f", "whowhen-pro", "-o", "some_file/x"), "some_file is a file, not a folder"),
    ]
    for args, needle in cases:
        _one_line_error(_cli(*args, cwd=tmp_path), needle)
    assert (tmp_path / "some_file").read_text() == "x"


def test_failforges_own_usage_errors_are_one_line_errors_too(tmp_path: Path) -> None:
    _one_line_error(
        _cli("generate", "--base-url", "http://127.0.0.1:9/v1", "--seeds", str(BUNDLED), cwd=tmp_path),
        "--model is required with --base-url",
    )
    _one_line_error(_cli("generate", "-o", "x", cwd=tmp_path), "give a campaign file or --seeds")


def test_a_seed_file_with_no_usable_seed_is_bad_input_in_replay_audit_and_generate(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "junk.jsonl").write_text('{"id": "x"}\n')
    for name in ("empty.jsonl", "junk.jsonl"):
        for args in (
            ("replay", name),
            ("audit", name),
            ("generate", "--seeds", name, "-o", f"out-{name}", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"),
        ):
            result = _cli(*args, cwd=tmp_path)
            _one_line_error(result, name)
    assert not list(tmp_path.glob("out-*"))


def test_a_base_url_that_is_not_a_url_is_refused_up_front(tmp_path: Path) -> None:
    flag = _cli("generate", "--seeds", str(BUNDLED), "-o", "o1", "--base-url", "notaurl", "--model", "m", cwd=tmp_path)
    _one_line_error(flag, "--base-url", "'notaurl' is not an http(s) URL")
    (tmp_path / "c.toml").write_text(
        f'seeds = ["{BUNDLED}"]\noutput = "o2"\n[agent]\nbase_url = "ftp://user:secretpass99@h/v1"\nmodel = "m"\n'
    )
    line = _one_line_error(_cli("generate", "c.toml", cwd=tmp_path), "field 'agent.base_url'", "is not an http(s) URL")
    assert "secretpass99" not in line
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()  # nothing was tried


# --- secrets on the terminal --------------------------------------------------------------------

#: A key with none of the usual key shapes (no "sk-", no "Bearer", no "api_key="): only knowing the value masks it.
PLAIN_KEY = "canary0123456789plainkeyXYZ"
URL_PASSWORD = "urlpass0123456789XYZ"


@pytest.fixture()
def rejecting_server() -> Iterator[str]:
    """An endpoint that answers every completion with 401, quoting the key it was sent (as providers quote
    a rejected key) and the request line; /models answers normally."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, payload: object) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            self._send(200, {"object": "list", "data": [{"id": "m", "object": "model"}]})

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")  # "Basic ..." stays whole
            self._send(
                401,
                {
                    "error": {
                        "message": f"Incorrect key provided: {key}. You can find your keys at [dashboard].",
                        "code": "invalid_api_key",
                    }
                },
            )

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://user:{URL_PASSWORD}@127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_401_that_trips_the_circuit_breaker_shows_no_key(tmp_path: Path, rejecting_server: str) -> None:
    """Two runs: the key sent as a Bearer token (echoed bare), then credentials in the URL's userinfo
    (sent as HTTP Basic, echoed as base64). The breaker's message quotes the body; no secret reaches
    the terminal (or, as before, a file)."""
    (tmp_path / "seeds.jsonl").write_text(BUNDLED.read_text().splitlines()[0] + "\n")
    plain_url = rejecting_server.replace(f"user:{URL_PASSWORD}@", "")
    import base64

    basic = base64.b64encode(f"user:{URL_PASSWORD}".encode()).decode()
    for name, url in (("bearer", plain_url), ("userinfo", rejecting_server)):
        campaign = tmp_path / f"{name}.toml"
        campaign.write_text(
            "\n".join(
                [
                    'seeds = ["seeds.jsonl"]',
                    f'output = "out-{name}"',
                    "circuit_breaker = 2",
                    "[agent]",
                    f'base_url = "{url}"',
                    'model = "m"',
                    'api_key_env = "FF_PLAIN_KEY"',
                    "timeout = 5.0",
                    "max_attempts = 1",
                    "[plan]",
                    "steps_per_seed = 2",
                    "modes_per_step = 2",
                ]
            )
            + "\n"
        )
        result = _cli("generate", str(campaign), cwd=tmp_path, env=_env(FF_PLAIN_KEY=PLAIN_KEY))
        assert result.returncode == 3, (name, result.returncode, result.stderr[-2000:])
        stopped = next(line for line in result.stderr.splitlines() if line.startswith("stopped:"))
        masked = "Incorrect key provided: ***" if name == "bearer" else "Incorrect key provided: Basic ***"
        assert "HTTP 401" in stopped and masked in stopped and "[dashboard]" in stopped, (
            stopped
        )  # the body was shown, masked
        shown = result.stdout + result.stderr
        assert PLAIN_KEY not in shown and URL_PASSWORD not in shown and basic not in shown, (name, stopped)
        for path in (tmp_path / f"out-{name}").rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                assert (
                    PLAIN_KEY.encode() not in data and URL_PASSWORD.encode() not in data and basic.encode() not in data
                ), path


# --- tampered seeds ----------------------------------------------------------------------------


def test_a_seed_whose_recorded_outcome_was_edited_does_not_replay_as_identical(tmp_path: Path) -> None:
    from failforge.errors import SeedIntegrityError
    from failforge.replay import replay
    from failforge.trajectory import load_jsonl, write_jsonl

    seeds, _ = load_jsonl(BUNDLED)
    seed = seeds[2]
    assert seed.outcome is not None and seed.outcome.success and seed.outcome.score == 1.0
    assert replay(seed).identical  # untouched, it replays
    edits = {
        "score": seed.outcome.model_copy(update={"score": 0.5}),
        "evaluator": seed.outcome.model_copy(update={"evaluator": "agentdojo.other"}),
        "details.final_output": seed.outcome.model_copy(
            update={"details": {**seed.outcome.details, "final_output": "edited"}}
        ),
    }
    for field, outcome in edits.items():
        with pytest.raises(SeedIntegrityError, match=f"outcome differs in {field}") as info:
            replay(seed.model_copy(update={"outcome": outcome}))
        assert info.value.step == len(seed.steps) - 1

    # through the CLI, as the hostile test did: "0/1 seeds replayed identically", exit 1
    write_jsonl(tmp_path / "edited.jsonl", [seed.model_copy(update={"outcome": edits["score"]})])
    result = _cli("replay", "edited.jsonl", cwd=tmp_path)
    assert result.returncode == 1 and "0/1 seeds replayed identically" in result.stdout, (
        result.stdout[-1500:],
        result.stderr[-1500:],
    )


def _stops_early(body: dict) -> tuple[str | None, list | None]:
    """A loopback agent that, given a steering note, answers at once from the task (an A.5 premature stop)."""
    from failforge.testing.model_servers import canned_answer

    messages = body.get("messages") or []
    if any(m.get("role") == "system" and "Private guidance" in str(m.get("content")) for m in messages):
        return "Done. " + next((str(m.get("content")) for m in messages if m.get("role") == "user"), ""), None
    return canned_answer(body)


def test_a_branch_prefix_is_the_seeds_steps_byte_for_byte(tmp_path: Path) -> None:
    """Bundled seeds of schema 1 (no response_hash recorded) and 2, branched by a campaign: every prefix
    step of every record written serialises to the seed's own step, byte for byte, but for the phase
    that marks it replayed (gold records used to carry a response_hash where the seed's step had null)."""
    from failforge.campaign import CampaignConfig, ResolvedModels, run_campaign
    from failforge.llm import ModelEndpoint
    from failforge.testing import LoopbackModelServer
    from failforge.trajectory import Trajectory, load_jsonl

    multi = BUNDLED.with_name("agentdojo_multiagent_demo.jsonl")
    seeds = {s.id: s for path in (BUNDLED, multi) for s in load_jsonl(path)[0]}
    assert any(step.model_call and step.model_call.response_hash is None for s in seeds.values() for step in s.steps)
    with LoopbackModelServer(policy=_stops_early) as server:
        endpoint = ModelEndpoint(base_url=server.base_url, model="loopback", api_key_env=None, timeout=30.0)
        config = CampaignConfig(
            seeds=[str(BUNDLED), str(multi)],
            output=str(tmp_path / "out"),
            guide_kind="auto",
            circuit_breaker=0,
            plan={"modes": ["A.5"], "steps_per_seed": 2, "modes_per_step": 1},
            filters={"decisiveness": {"enabled": False}},
        )
        run_campaign(config, ResolvedModels(agent=endpoint, guide=endpoint))
    compared = {"gold.jsonl": 0, "rejected.jsonl": 0}
    for name in compared:
        path = tmp_path / "out" / name
        for line in path.read_text().splitlines() if path.exists() else []:
            data = json.loads(line)
            record = data if name == "gold.jsonl" else data.get("trajectory")
            if not record:
                continue
            branch = Trajectory.model_validate(record)
            seed = seeds[branch.parent_id or ""]
            for step in branch.steps[: branch.branch_step]:
                want = seed.steps[step.index].model_copy(update={"phase": "replayed"}).model_dump_json()
                assert step.model_dump_json() == want, (branch.id, step.index)
                assert want in line  # the line as written holds the seed's step verbatim
            compared[name] += 1
    assert compared["gold.jsonl"] >= 5, compared


# --- one line per attempt -------------------------------------------------------------------------


def test_after_a_successful_retry_an_attempt_is_in_one_file_only(tmp_path: Path) -> None:
    """The hostile tester's case: an outage trips the breaker (attempts failed), the endpoint comes back,
    the same command retries them and they finish: failed.jsonl no longer lists them."""
    from failforge.testing import FaultPlan, LoopbackModelServer

    with LoopbackModelServer(faults=FaultPlan(error_rate=1.0)) as server:
        (tmp_path / "c.toml").write_text(
            f'seeds = ["{BUNDLED}"]\noutput = "out"\ncircuit_breaker = 3\n[agent]\nbase_url ='
            f' "{server.base_url}"\nmodel = "loopback"\napi_key_env = "NO_KEY_NEEDED"\ntimeout = 5.0\nmax_attempts ='
            " 2\n[plan]\nsteps_per_seed = 1\nmodes_per_step = 1\n"
        )
        down = _cli("generate", "c.toml", cwd=tmp_path)
        assert down.returncode == 3, down.stderr[-1500:]
        failed_before = [
            json.loads(line)["attempt_id"] for line in (tmp_path / "out" / "failed.jsonl").read_text().splitlines()
        ]
        assert len(failed_before) == 3
        server.faults = FaultPlan()
        up = _cli("generate", "c.toml", cwd=tmp_path)
    assert up.returncode == 0, up.stderr[-1500:]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["result"]["totals"]["failed"] == 0 and manifest["result"]["this_run"]["recovery"]["retried"] == 3
    files = {
        name: (
            [
                json.loads(line).get("attempt_id") or json.loads(line)["provenance"]["attempt_id"]
                for line in (tmp_path / "out" / name).read_text().splitlines()
            ]
            if (tmp_path / "out" / name).exists()
            else []
        )
        for name in ("gold.jsonl", "rejected.jsonl", "failed.jsonl")
    }
    assert files["failed.jsonl"] == [], files["failed.jsonl"]
    everywhere = [a for ids in files.values() for a in ids]
    assert len(everywhere) == len(set(everywhere)) == manifest["planned_attempts"] and set(failed_before) <= set(
        everywhere
    )


# --- a SIGKILLed driver leaves no process behind ---------------------------------------------------


def _process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) of every process, read from /proc."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            table[int(entry.name)] = (int(fields[1]), fields[0])
    return table


def _descendants(root: int) -> set[int]:
    table, found, frontier = _process_table(), set(), {root}
    while frontier:
        frontier = {pid for pid, (parent, _) in table.items() if parent in frontier and pid not in found}
        found |= frontier
    return found


def _still_running(pids: set[int]) -> list[int]:
    table = _process_table()
    return sorted(
        pid for pid in pids if pid in table and table[pid][1] != "Z"
    )  # a zombie has ended (PID 1 may not reap)


def test_a_sigkilled_driver_leaves_no_worker_forkserver_or_resource_tracker(tmp_path: Path) -> None:
    import signal
    import time

    from failforge.testing import LoopbackModelServer

    with LoopbackModelServer(latency=0.5) as server:
        (tmp_path / "c.toml").write_text(
            f'seeds = ["{BUNDLED}"]\noutput = "out"\nexecutor = "process"\nconcurrency = 2\n[agent]\nbase_url ='
            f' "{server.base_url}"\nmodel = "loopback"\napi_key_env = "NO_KEY_NEEDED"\ntimeout = 30.0\n'
        )
        driver = subprocess.Popen(
            [sys.executable, "-m", "failforge", "generate", "c.toml"],
            cwd=tmp_path,
            env=_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        spawned: set[int] = set()
        try:
            deadline = time.monotonic() + 180
            while not (
                len(spawned) >= 4 and server.counts["ok"] >= 2
            ):  # forkserver, resource tracker, 2 workers, attempts under way
                assert driver.poll() is None and time.monotonic() < deadline, (driver.returncode, spawned)
                spawned |= _descendants(driver.pid)
                time.sleep(0.2)
            spawned |= _descendants(driver.pid)
            driver.send_signal(signal.SIGKILL)
            driver.wait(timeout=30)
            deadline = time.monotonic() + 10
            while _still_running(spawned) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not _still_running(spawned), (
                f"still running 10 s after the driver was killed: {_still_running(spawned)} of {sorted(spawned)}"
            )
        finally:
            for pid in _still_running(spawned):
                os.kill(pid, signal.SIGKILL)
            if driver.poll() is None:
                driver.kill()


# --- terminal output on a pipe (item 8) ------------------------------------------------------------


def test_tables_are_not_cut_at_80_columns_when_stdout_is_a_pipe(tmp_path: Path) -> None:
    from failforge.taxonomy import MODES

    metrics = ROOT / "tests" / "fixtures" / "attribution" / "metrics"
    score = _cli("score", str(metrics / "records.jsonl"), str(metrics / "predictions.jsonl"), cwd=tmp_path)
    assert score.returncode == 0, score.stderr[-1500:]
    header = next(line for line in score.stdout.splitlines() if line.startswith("┃"))
    for column in ("agent", "step", "MAE", "signed", "early %", "mode F1", "family F1", "joint"):
        assert f" {column} " in header, header
    assert "75.0 [30–95]" in score.stdout and "…" not in score.stdout, score.stdout[:3000]

    taxonomy = _cli("taxonomy", cwd=tmp_path)
    assert taxonomy.returncode == 0 and "…" not in taxonomy.stdout
    rows = taxonomy.stdout.splitlines()
    for mode in MODES:  # each mode on one row, its whole definition in it
        assert any(line.startswith(f"│ {mode.code} ") and mode.definition in line for line in rows), mode.code

    (tmp_path / "one.jsonl").write_text(BUNDLED.read_text().splitlines()[0] + "\n")
    audit = _cli("audit", "one.jsonl", cwd=tmp_path)
    assert audit.returncode == 0, audit.stderr[-1500:]
    header = next(line for line in audit.stdout.splitlines() if line.startswith("┃"))
    for column in (
        "drift by type",
        "drift by position",
        "cache misses",
        "infra/config errors",
        "success on replay",
        "seconds",
    ):
        assert f" {column} " in header, header


def test_several_tasks_after_one_task_flag(tmp_path: Path) -> None:
    from failforge.trajectory import load_jsonl

    result = _cli(
        "seeds",
        "agentdojo",
        "--suite",
        "banking",
        "--task",
        "user_task_1",
        "user_task_3",
        "--task",
        "user_task_0",
        "-o",
        "s.jsonl",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-1500:]
    seeds, errors = load_jsonl(tmp_path / "s.jsonl")
    assert not errors and sorted(s.task.task_id for s in seeds) == ["user_task_0", "user_task_1", "user_task_3"]
