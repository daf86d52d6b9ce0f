"""The build at scale, measured: a recipe over every environment with deterministic scripted policies (each a
loopback model that reports token usage), run by `failforge build` in a child process on the chosen executor,
SIGKILLed part-way and resumed, then checked: every attempt in exactly one of gold / rejected / failed, once.

Cells: BFCL, tau2-bench, AgentDojo, TextWorld, DA-Bench, AgentDojo teams, MiniWoB++ (headless Chromium), HumanEval
(the local sandbox) and ScienceWorld (a JVM per worker); their policies are in `failforge.testing` (the AgentDojo,
TextWorld and team ones still in tests/integration).

Prints per cell: attempts, kept, attempts per second (wall, from build/rounds.jsonl); the driver's and workers' peak
resident memory (sampled from /proc every 0.5 s); ledger and output sizes; each run's wall time (the resumed one
after the SIGKILL too) and any process below the driver that outlived it. Run from the repository root:

    PYTHONHASHSEED=0 python scripts/build_scale.py --out /tmp/scale --samples 40 --executor process --kill-after 120 \
        --samples-for miniwob=3,humaneval=10,scienceworld=2

``--samples`` multiplies each cell's planned attempts (plan.samples); ``--samples-for`` gives a cell its own (MiniWoB++
and ScienceWorld attempts take seconds each). The scripted policies are deterministic, so samples of one (step, mode)
make the same record and the release keeps it once (the dedup count says how many).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "integration")]  # scripted policies of the tests

CELLS = ("bfcl", "tau2", "agentdojo", "textworld", "dabench", "agentdojo-team", "miniwob", "humaneval", "scienceworld")
MINIWOB_TASKS = ("click-button", "enter-text", "login-user")
SCIENCEWORLD_TASK = "freeze/0"  # 26 gold actions
BFCL_TASKS = ("multi_turn_miss_param_2", "multi_turn_miss_func_5", "multi_turn_miss_func_0")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _samples_for(text: str) -> dict[str, int]:
    """``miniwob=3,scienceworld=2`` -> {"miniwob": 3, "scienceworld": 2}; a bad pair is argparse's one-line error."""
    out: dict[str, int] = {}
    for pair in filter(None, text.split(",")):
        name, _, number = pair.partition("=")
        if name not in CELLS or not number.isdigit() or int(number) < 1:
            raise argparse.ArgumentTypeError(
                f"{pair!r}: expected CELL=N with N >= 1 and CELL one of {', '.join(CELLS)}"
            )
        out[name] = int(number)
    return out


def _servers(stack: ExitStack, seeds_dir: Path, cells: list[str]) -> dict[str, tuple[Path, str, dict[str, Any]]]:
    """Per cell: its seed file, its loopback model's URL and its plan."""
    from failforge.seeds import oracle_seed
    from failforge.testing import LoopbackModelServer
    from failforge.trajectory import load_jsonl, write_jsonl

    out: dict[str, tuple[Path, str, dict[str, Any]]] = {}
    for cell in cells:
        path = seeds_dir / f"{cell}.jsonl"
        if cell == "bfcl":
            from failforge.testing.bfcl_policy import BfclPolicies

            seeds = [oracle_seed("bfcl", t) for t in BFCL_TASKS]
            server = LoopbackModelServer(policy=BfclPolicies(list(BFCL_TASKS)), report_usage=True, port=_port())
            plan = {"modes": ["R.1", "A.3"], "steps_per_seed": 1, "modes_per_step": 2}
        elif cell == "tau2":
            from failforge.testing.conversation_policy import ConversationPolicy

            seeds = [oracle_seed("tau2", "0", {"domain": "retail"})]
            server = LoopbackModelServer(
                agent_policy=ConversationPolicy("retail", "0"), report_usage=True, port=_port()
            )
            plan = {"modes": ["R.1", "A.5"], "steps_per_seed": 4, "modes_per_step": 2}
        elif cell == "agentdojo":
            from tests.integration.test_golden_pipeline import SingleAgentPolicy

            bundled, _ = load_jsonl(ROOT / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl")
            seeds = bundled[:4]
            server = LoopbackModelServer(policy=SingleAgentPolicy(seeds), report_usage=True, port=_port())
            plan = {"modes": ["A.2", "A.5", "A.6", "R.3"], "steps_per_seed": 2, "modes_per_step": 4}
        elif cell == "textworld":
            from tests.integration.test_textworld_campaign import GAME, WalkthroughPolicy

            from failforge.environments import environment

            seeds = [oracle_seed("textworld", GAME)]
            walkthrough = environment("textworld").walkthrough(seeds[0].environment)  # type: ignore[attr-defined]
            server = LoopbackModelServer(policy=WalkthroughPolicy(walkthrough), report_usage=True, port=_port())
            plan = {"modes": ["A.5", "A.2", "A.6"], "steps_per_seed": 3, "modes_per_step": 3}
        elif cell == "dabench":
            from failforge.testing.code_agent_policy import code_agent_policy

            seeds = [oracle_seed("dabench", "dabench-18", {"backend": "local"})]
            server = LoopbackModelServer(policy=code_agent_policy(seeds), report_usage=True, port=_port())
            plan = {"modes": ["R.3", "A.4"], "steps_per_seed": 5, "modes_per_step": 2}
        elif cell == "agentdojo-team":
            from tests.integration.test_multiagent_campaign import TeamPolicy

            seeds = [
                oracle_seed("agentdojo", "banking/user_task_1", harness=h)
                for h in ("orchestrator-workers", "plan-execute-verify")
            ]
            server = LoopbackModelServer(agent_policy=TeamPolicy(seeds), report_usage=True, port=_port())
            plan = {"modes": ["C.1", "C.2", "C.3"], "steps_per_seed": 3, "modes_per_step": 3}
        elif cell == "miniwob":  # headless Chromium; the canned policy stops early when steered (A.5)
            seeds = [oracle_seed("miniwob", t, {"cache_dir": str(seeds_dir / "miniwob-cache")}) for t in MINIWOB_TASKS]
            server = LoopbackModelServer(report_usage=True, port=_port())
            plan = {"modes": ["A.5"], "steps_per_seed": 2, "modes_per_step": 1}
        elif cell == "humaneval":  # the task's official tests in the local sandbox; a judge checks R.2
            from failforge.environments.humaneval import problem
            from failforge.testing.humaneval_policy import TASK, wrong_code_policy

            seeds = [oracle_seed("humaneval", TASK, {"backend": "local"})]
            server = LoopbackModelServer(
                policy=wrong_code_policy(problem(TASK)["prompt"]), report_usage=True, port=_port()
            )
            plan = {"modes": ["R.2"], "steps_per_seed": 5, "modes_per_step": 1}
        elif cell == "scienceworld":  # the bundled jar on a JVM per worker; the world's own score
            from failforge.environments import environment
            from failforge.testing.scienceworld_policy import follow_gold_or_the_note

            seeds = [oracle_seed("scienceworld", SCIENCEWORLD_TASK)]
            gold = environment("scienceworld").gold(seeds[0].environment)  # type: ignore[attr-defined]
            server = LoopbackModelServer(policy=follow_gold_or_the_note(gold), report_usage=True, port=_port())
            plan = {"modes": ["A.5", "A.6", "A.2"], "steps_per_seed": 3, "modes_per_step": 3}
            from failforge.environments import scienceworld_env

            scienceworld_env.shutdown_pool()  # the JVM that recorded the seed: the build's workers start their own
        else:
            raise SystemExit(f"no scripted cell {cell!r}; choose from {', '.join(CELLS)}")
        if not all(s.outcome.success for s in seeds):
            raise SystemExit(
                f"cell {cell}: an oracle seed did not succeed: {[s.id for s in seeds if not s.outcome.success]}"
            )
        write_jsonl(path, seeds)
        stack.enter_context(server)
        out[cell] = (path, server.base_url, plan)
    return out


def _recipe(cells: dict[str, tuple[Path, str, dict[str, Any]]], args: argparse.Namespace) -> str:
    lines = [
        f"round_size = {args.round_size}",
        "[defaults]",
        f'executor = "{args.executor}"',
        f"concurrency = {args.concurrency}",
        "attempt_deadline = 300",
    ]
    for name, (seeds, url, plan) in cells.items():
        lines += [
            "[[cells]]",
            f'name = "{name}"',
            f'seeds = ["{seeds}"]',
            f'agent = {{ base_url = "{url}", model = "loopback", timeout = 120, max_attempts = 1 }}',
            *(['guide_kind = "rules"'] if name == "bfcl" else []),
            *(["[cells.filters.conformance]", "keep_unverified = true"] if name == "agentdojo-team" else []),
            *(["[cells.filters.conformance]", "judge = true"] if name == "humaneval" else []),
            *(["[cells.filters.conformance]", "judge = false"] if name == "scienceworld" else []),
            f"[cells.plan]\nsamples = {args.samples_for.get(name, args.samples)}",
            *(f"{k} = {json.dumps(v)}" for k, v in plan.items()),
        ]
    if args.total:
        lines += ["[targets]", f"total = {args.total}"]
    lines += ["[prices.loopback]", "input_per_mtok = 1.0", "output_per_mtok = 4.0"]
    return "\n".join(lines) + "\n"


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _name(pid: int) -> str:
    """The process's command name ('' once it is gone), so a reused pid is not mistaken for the one seen."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (process workers are the forkserver's children; Ray's are the raylet's)."""
    parent: dict[int, int] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                parent[int(proc.name)] = int(proc.joinpath("stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    out, frontier = [], [pid]
    while frontier:
        kids = [p for p, pp in parent.items() if pp in frontier]
        out += kids
        frontier = kids
    return out


def _run(
    args: argparse.Namespace, recipe: Path, release: Path, kill_after: float | None, pilot: int | None = None
) -> dict[str, Any]:
    """One `failforge build` in a child; its peak memory; SIGKILL after ``kill_after`` seconds if given."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "failforge",
            "build",
            str(recipe),
            "-o",
            str(release),
            *(["--pilot", str(pilot)] if pilot else []),
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(release.parent / "build.log", "a"),  # noqa: SIM115 - closed with the child
    )
    started = time.monotonic()
    peak_driver = peak_workers = 0
    seen: set[tuple[int, str]] = set()  # (pid, name) of every process seen below the driver
    before, first_settled, polled = _settled_total(release), None, 0.0
    while child.poll() is None:
        peak_driver = max(peak_driver, _rss_kb(child.pid))
        below = _descendants(child.pid)
        known = {pid for pid, _ in seen}
        seen.update((p, _name(p)) for p in below if p not in known)
        peak_workers = max(peak_workers, sum(_rss_kb(p) for p in below))
        if first_settled is None and time.monotonic() - polled > 2.0:
            polled = time.monotonic()
            if _settled_total(release) > before:
                first_settled = round(polled - started, 1)
        if kill_after is not None and time.monotonic() - started > kill_after:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            break
        time.sleep(0.5)
    seconds = round(time.monotonic() - started, 1)
    time.sleep(10)  # workers, browsers and JVMs get a moment to notice their parent is gone
    outlived = sorted(f"{name} ({pid})" for pid, name in seen if name and _name(pid) == name)  # '': gone when seen
    return {
        "exit": child.returncode,
        "seconds": seconds,
        "peak_driver_mb": round(peak_driver / 1024, 1),
        "peak_workers_mb": round(peak_workers / 1024, 1),
        "first_new_attempt_settled_s": first_settled,
        "processes_seen_below_driver": len(seen),
        "outlived_driver": outlived,
    }


def _settled_total(release: Path) -> int:
    """Attempts settled in every cell's ledger so far (read-only; the driver may be writing)."""
    total = 0
    for ledger in (release / "cells").glob("*/ledger.sqlite"):
        try:
            with sqlite3.connect(f"file:{ledger}?mode=ro", uri=True, timeout=1) as db:
                row = db.execute("SELECT COUNT(*) FROM attempts WHERE state IN ('done','rejected','failed')").fetchone()
                total += int(row[0])
        except sqlite3.Error:
            pass
    return total


def _exactly_once(release: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for cell in sorted((release / "cells").iterdir()):
        ids: Counter[str] = Counter()
        for name in ("gold.jsonl", "rejected.jsonl", "failed.jsonl"):
            if (cell / name).exists():
                for line in (cell / name).read_text(encoding="utf-8").splitlines():
                    record = json.loads(line)
                    ids[record.get("attempt_id") or record["provenance"]["attempt_id"]] += 1
        with sqlite3.connect(cell / "ledger.sqlite") as db:
            states = dict(db.execute("SELECT state, COUNT(*) FROM attempts GROUP BY state").fetchall())
        settled = states.get("done", 0) + states.get("rejected", 0) + states.get("failed", 0)
        out[cell.name] = {
            "settled": len(ids),
            "twice": sum(1 for n in ids.values() if n > 1),
            "ledger_settled": settled,
            "ledger_unsettled": states.get("planned", 0) + states.get("running", 0),
            "bytes": {p.name: p.stat().st_size for p in cell.iterdir() if p.is_file()},
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cells", default=",".join(CELLS))
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument(
        "--samples-for",
        type=_samples_for,
        default={},
        metavar="CELL=N[,CELL=N]",
        help="a cell's own --samples (the slow ones: miniwob, scienceworld), e.g. miniwob=3,scienceworld=2",
    )
    parser.add_argument("--executor", default="process", choices=("local", "process", "ray"))
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--round-size", type=int, default=50)
    parser.add_argument("--kill-after", type=float, default=None, help="SIGKILL the first run after N seconds")
    parser.add_argument("--pilot", type=int, default=None, help="first a pilot of N attempts per cell")
    parser.add_argument("--total", type=int, default=None, help="the recipe's total gold target")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    release = args.out / "release"
    with ExitStack() as stack:
        cells = _servers(stack, args.out, args.cells.split(","))
        recipe = args.out / "recipe.toml"
        recipe.write_text(_recipe(cells, args), encoding="utf-8")
        runs = [{**_run(args, recipe, release, None, args.pilot), "pilot": args.pilot}] if args.pilot else []
        runs.append(_run(args, recipe, release, args.kill_after))
        if args.kill_after is not None:
            runs.append({**_run(args, recipe, release, None), "after_sigkill": True})
    rounds = [json.loads(line) for line in (release / "build" / "rounds.jsonl").read_text().splitlines()]
    per_cell: dict[str, dict[str, float]] = {}
    for row in rounds:
        cell = per_cell.setdefault(row["cell"], {"attempts": 0, "kept": 0, "seconds": 0.0})
        cell["attempts"] += row["attempts"]
        cell["kept"] += row["kept"]
        cell["seconds"] += row["seconds"]
    for cell in per_cell.values():
        cell["attempts_per_s"] = round(cell["attempts"] / cell["seconds"], 3) if cell["seconds"] else 0.0
    report = {
        "executor": args.executor,
        "concurrency": args.concurrency,
        "samples": args.samples,
        "samples_for": args.samples_for,
        "runs": runs,
        "per_cell": per_cell,
        "exactly_once": _exactly_once(release),
        "release_bytes": sum(p.stat().st_size for p in release.rglob("*") if p.is_file()),
    }
    built = release / "build" / "report.json"
    if built.exists():
        report["pilot_vs_actual"] = json.loads(built.read_text(encoding="utf-8")).get("pilot_vs_actual")
    pilot = release / "build" / "pilot.json"
    if pilot.exists():
        projection = json.loads(pilot.read_text(encoding="utf-8"))
        report["pilot_projection"] = {
            "cells": {
                c["cell"]: {k: c[k] for k in ("attempts", "kept", "yield", "quota", "more_attempts")}
                for c in projection["cells"]
            },
            "to_targets": projection["to_targets"],
        }
    print(json.dumps(report, indent=1))
    (args.out / "scale_report.json").write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
