#!/usr/bin/env python3
"""Benchmark: what one attempt costs failforge itself, per environment, against a zero-latency model.

An attempt is the campaign's unit of work (``run_attempt``): the guide's call, the seed's prefix
replayed up to the branch step, the injected step, the live continuation, the benchmark's evaluator
and the filters. The model is a loopback server that answers at once (``failforge.testing``), so
every millisecond measured is failforge's, the environment's, or the model client's. Per
environment (AgentDojo, MiniWoB++, HumanEval on the docker and on the local sandbox; TextWorld, ScienceWorld
BFCL multi-turn and tau2-bench with ``--envs textworld scienceworld bfcl tau2``) it prints medians in
milliseconds of:

- ``open`` / ``close``: the environment episode (a sandbox, a browser context, a task suite's state),
- ``per replayed step``: a prefix replay without the episode's open and close, per step replayed,
- ``evaluator`` and ``filters``,
- ``own evaluator`` (tau2 only): tau2's own ``evaluate_simulation`` on the same trajectory each time failforge's
  evaluator runs (every reward must agree, or the script stops), so the two costs sit side by side. For tau2
  both are timed on the seed's own trajectory (the loopback model does not play a conversation to its end,
  so an attempt's branch never reaches tau2's DB comparison),
- ``attempt``: one whole attempt (wall time) and ``attempt cpu`` (this process's CPU time only: the
  engine, Chromium and sandbox processes are not in it),
- ``attempts/min``: what one worker doing attempts one after another sustains (60000 / ``attempt``).

    python scripts/bench_attempt_cpu.py                                   # this tree
    python scripts/bench_attempt_cpu.py --before 0778ee8 --rounds 3       # that revision vs this tree, ratios
    python scripts/bench_attempt_cpu.py --envs agentdojo humaneval-local --attempts 20

``--before`` takes a git revision (checked out into a temporary worktree, removed afterwards) or a
source tree. Each tree is measured in its own process with its ``src`` first on ``PYTHONPATH``; the
trees take turns ``--rounds`` times and each number is the median over rounds, so a burst of load on
a shared machine does not land on one side only. The ratio is after / before (below 1: faster now;
for attempts/min above 1 is better). The seeds are recorded once, by the oldest tree measured (the
``--before`` one when given: a newer tree reads older trajectories, not the reverse), and replayed by both.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
ENVIRONMENTS = (
    "agentdojo",
    "miniwob",
    "humaneval-docker",
    "humaneval-local",
    "textworld",
    "scienceworld",
    "bfcl",
    "tau2",
)
#: Measured when --envs is not given; textworld, scienceworld, bfcl and tau2 only on request
#: (``--envs textworld``), so a ``--before`` revision that predates them still records every default seed
#: (and no JVM is needed by default).
DEFAULT_ENVS = ("agentdojo", "miniwob", "humaneval-docker", "humaneval-local")
METRICS = (
    "open",
    "close",
    "per replayed step",
    "evaluator",
    "own evaluator",
    "filters",
    "attempt",
    "attempt cpu",
    "attempts/min",
)


# -- the measuring half (runs inside one tree's process) ---------------------------------------------


class _Timings:
    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = {}

    def add(self, name: str, seconds: float) -> None:
        self.samples.setdefault(name, []).append(seconds * 1000)

    def timed(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.add(name, time.perf_counter() - started)

        return wrapper


class _TimedEpisode:
    """The real episode, with its open (made by the caller), evaluator and close timed."""

    def __init__(self, inner: Any, timings: _Timings) -> None:
        self._inner, self._timings = inner, timings

    def __enter__(self) -> _TimedEpisode:
        self._inner.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        started = time.perf_counter()
        try:
            self._inner.__exit__(*exc)
        finally:
            self._timings.add("close", time.perf_counter() - started)

    def evaluate(self, *args: Any, **kwargs: Any) -> Any:
        outcome = self._timings.timed("evaluator", self._inner.evaluate)(*args, **kwargs)
        if type(self._inner).__module__.startswith("failforge.environments.tau2"):
            from tau2_eval_cost import tau2_own_evaluation  # beside this script

            seconds, reward = tau2_own_evaluation(self._inner, list(args[1]))
            self._timings.add("own evaluator", seconds)
            if reward != outcome.score:
                raise SystemExit(
                    f"tau2: failforge's evaluator gave {outcome.score}, tau2's own evaluate_simulation {reward}"
                )
        return outcome

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _TimedPlugin:
    def __init__(self, inner: Any, timings: _Timings) -> None:
        self._inner, self._timings = inner, timings
        self.drift_error = inner.drift_error

    def open(self, spec: Any) -> _TimedEpisode:
        started = time.perf_counter()
        episode = self._inner.open(spec)
        self._timings.add("open", time.perf_counter() - started)
        return _TimedEpisode(episode, self._timings)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _instrument(timings: _Timings) -> None:
    """Time the episode's open / evaluator / close and the filters through the names the code looks them up by."""
    import importlib

    try:  # the engine that runs every gold kind's filters; a --before tree may still have them in campaign._attempt
        attempt_module = importlib.import_module("failforge.gold._engine")
    except ImportError:
        attempt_module = importlib.import_module("failforge.campaign._attempt")
    try:  # the runner's home since it became failforge.replay; a --before tree may still have failforge.episode
        episode_module = importlib.import_module("failforge.replay._episode")
    except ImportError:
        episode_module = importlib.import_module("failforge.episode")

    real_environment = episode_module.environment
    episode_module.environment = lambda name: _TimedPlugin(real_environment(name), timings)  # type: ignore[attr-defined,assignment,return-value]
    attempt_module.run_filters = timings.timed("filters", attempt_module.run_filters)


def measure(seeds_dir: Path, envs: list[str], attempts: int) -> dict[str, dict[str, float]]:
    from failforge.campaign import CampaignConfig, Models, ResolvedModels
    from failforge.gold import run_job as run_attempt
    from failforge.injection import plan_attempts
    from failforge.llm import ModelEndpoint
    from failforge.replay import replay
    from failforge.testing import LoopbackModelServer
    from failforge.trajectory import load_jsonl

    results: dict[str, dict[str, float]] = {}
    timings = _Timings()
    _instrument(timings)
    with LoopbackModelServer() as server:
        endpoint = ModelEndpoint(base_url=server.base_url, model="loopback", api_key_env=None, timeout=60)
        models = Models(ResolvedModels(agent=endpoint, guide=endpoint))
        config = CampaignConfig(seeds=[], output=str(seeds_dir / "out"))
        for env in envs:
            path = seeds_dir / f"{env}.jsonl"
            if not path.exists():
                continue
            seed = load_jsonl(path)[0][0]
            spec = plan_attempts(seed, modes=None, steps_per_seed=1, modes_per_step=1, samples=1, rng_seed=0)[0]
            run_attempt(seed, spec, models, config, {})  # warm: imports, the browser, the pool's first sandbox
            timings.samples.clear()
            for _ in range(attempts):
                wall, cpu = time.perf_counter(), time.process_time()
                result = run_attempt(seed, spec, models, config, {})
                timings.add("attempt", time.perf_counter() - wall)
                timings.add("attempt cpu", time.process_time() - cpu)
                if result.status == "failed":
                    raise SystemExit(f"{env}: the attempt failed: {getattr(result.record, 'reasons', '')}")
            attempt_samples = dict(timings.samples)
            if (
                env == "tau2"
            ):  # the loopback model does not play a conversation to its end: time the seed's own evaluation
                attempt_samples.update(_seed_evaluations(seed, attempts, timings))
            timings.samples.clear()
            for _ in range(attempts):
                started = time.perf_counter()
                report = replay(seed, until=spec.step)
                timings.add("prefix", time.perf_counter() - started)
                assert report.identical, report.to_dict()
            prefix = [
                p - o - c
                for p, o, c in zip(
                    timings.samples["prefix"], timings.samples["open"], timings.samples["close"], strict=True
                )
            ]
            steps = max(1, spec.step - 1)  # steps 1..t-1 are replayed (step 0 is the task)
            row = {name: statistics.median(values) for name, values in attempt_samples.items()}
            row["per replayed step"] = statistics.median(prefix) / steps
            row["attempts/min"] = 60000 / row["attempt"]
            for name in METRICS:  # a stage the attempt never reached (rejected before the filters) is not a number
                row.setdefault(name, float("nan"))
            results[env] = row
        models.close()
    return results


def _seed_evaluations(seed: Any, times: int, timings: _Timings) -> dict[str, list[float]]:
    """failforge's and tau2's own evaluator on the seed's trajectory (reward 1.0, the whole DB compared),
    ``times`` each."""
    from failforge.environments import environment

    timings.samples.clear()
    with _TimedEpisode(environment(seed.environment.name).open(seed.environment), timings) as episode:
        for _ in range(times):
            episode.evaluate(None, seed.steps)
    return {name: timings.samples[name] for name in ("evaluator", "own evaluator")}


# -- the driving half ----------------------------------------------------------------------------------


def record_seeds(directory: Path, envs: list[str]) -> None:
    """One seed per environment, recorded by this tree: the oracle / demonstration, through its default harness."""
    from failforge.environments.sandbox import sandbox_doctor
    from failforge.seeds import oracle_seed
    from failforge.trajectory import write_jsonl

    works = {row.backend: row.works for row in sandbox_doctor()}
    plans = {
        "agentdojo": ("agentdojo", "banking/user_task_3", {}),
        "miniwob": ("miniwob", "click-button", {"cache_dir": str(directory / "miniwob-cache")}),
        "humaneval-docker": ("humaneval", "HumanEval/0", {"backend": "docker"}),
        "humaneval-local": ("humaneval", "HumanEval/0", {"backend": "local"}),
        "textworld": ("textworld", "simple-dense/1", {}),
        "scienceworld": ("scienceworld", "freeze/0", {}),
        "bfcl": ("bfcl", "multi_turn_base_0", {}),
        "tau2": ("tau2", "0", {"domain": "airline"}),
    }
    for env in envs:
        name, task, options = plans[env]
        if name == "humaneval" and not works.get(options["backend"]):
            print(f"{env}: skipped, the {options['backend']} sandbox does not work here", file=sys.stderr)
            continue
        if name == "bfcl" and not _bfcl_works():
            print(
                f"{env}: skipped, bfcl-eval is not installed (bash scripts/benchmarks/install_bfcl.sh)", file=sys.stderr
            )
            continue
        seed = oracle_seed(name, task, options)
        if not (seed.outcome and seed.outcome.success):
            raise SystemExit(f"{env}: the oracle seed did not succeed")
        write_jsonl(directory / f"{env}.jsonl", [seed])


def _bfcl_works() -> bool:
    try:
        from failforge.environments import environment

        return environment("bfcl").doctor()[0]
    except Exception:  # an older tree without the bfcl environment, or no bfcl-eval
        return False


def _tree_env(src: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(src) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "FAILFORGE_NO_REEXEC": "1",
        "PYTHONHASHSEED": "0",
    }


def _record_in_tree(src: Path, seeds: Path, envs: list[str]) -> None:
    argv = [sys.executable, str(Path(__file__).resolve()), "--record", str(seeds), "--envs", *envs]
    done = subprocess.run(argv, env=_tree_env(src), capture_output=True, text=True, check=False)
    sys.stderr.write(done.stderr if done.returncode == 0 else "")
    if done.returncode != 0:
        raise SystemExit(f"recording seeds with {src} failed:\n{done.stderr[-3000:]}")


def _measure_tree(src: Path, seeds: Path, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    argv = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--measure",
        str(seeds),
        "--attempts",
        str(args.attempts),
        "--envs",
        *args.envs,
    ]
    done = subprocess.run(argv, env=_tree_env(src), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"measuring {src} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _source_of(before: str, stack: list[Callable[[], None]]) -> Path:
    path = Path(before)
    if path.is_dir():
        return path / "src" if (path / "src" / "failforge").is_dir() else path
    tmp = Path(tempfile.mkdtemp(prefix="failforge-bench-before-"))
    subprocess.run(
        ["git", "-C", str(HERE), "worktree", "add", "--detach", str(tmp / "tree"), before],
        check=True,
        capture_output=True,
    )

    def remove() -> None:
        subprocess.run(
            ["git", "-C", str(HERE), "worktree", "remove", "--force", str(tmp / "tree")],
            check=False,
            capture_output=True,
        )
        shutil.rmtree(tmp, ignore_errors=True)

    stack.append(remove)
    return tmp / "tree" / "src"


def _load() -> str:
    with open("/proc/loadavg", encoding="ascii") as handle:
        return " ".join(handle.read().split()[:3])


def arguments() -> argparse.ArgumentParser:
    """The options; every one has a default, so the bench runs with none (tests/unit/test_benches.py)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=list(DEFAULT_ENVS), choices=ENVIRONMENTS)
    parser.add_argument(
        "--attempts", type=int, default=10, help="attempts (and prefix replays) per environment per round"
    )
    parser.add_argument("--before", help="git revision or source tree to compare against (default: no comparison)")
    parser.add_argument(
        "--rounds", type=int, default=1, help="alternate the trees this many times; medians over rounds"
    )
    parser.add_argument("--measure", metavar="SEEDS_DIR", help=argparse.SUPPRESS)
    parser.add_argument("--record", metavar="SEEDS_DIR", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = arguments().parse_args(argv)
    if args.record:
        record_seeds(Path(args.record), args.envs)
        return 0
    if args.measure:
        print(json.dumps(measure(Path(args.measure), args.envs, args.attempts)))
        return 0
    os.environ.setdefault("PYTHONHASHSEED", "0")
    load_start = _load()
    cleanups: list[Callable[[], None]] = []
    seeds = Path(tempfile.mkdtemp(prefix="failforge-bench-attempt-"))
    cleanups.append(lambda: shutil.rmtree(seeds, ignore_errors=True))
    try:
        trees = {"after": HERE / "src"}
        if args.before:
            trees = {"before": _source_of(args.before, cleanups), **trees}
        _record_in_tree(next(iter(trees.values())), seeds, args.envs)
        runs: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, src in trees.items():
                runs[name].append(_measure_tree(src, seeds, args))
    finally:
        for cleanup in reversed(cleanups):
            cleanup()
    results = {
        name: {
            env: {m: statistics.median(run[env].get(m, float("nan")) for run in tree_runs) for m in METRICS}
            for env in tree_runs[0]
        }
        for name, tree_runs in runs.items()
    }
    print(
        f"median ms over {args.attempts} attempts x {args.rounds} round(s); load average {load_start} at start,"
        f" {_load()} at end ({os.cpu_count()} CPUs)"
    )
    for env in results["after"]:
        print(f"\n{env}")
        after = results["after"][env]
        if "before" in results and env in results["before"]:
            before = results["before"][env]
            print(f"{'':<18}  {'before':>9}  {'after':>9}  {'ratio':>6}")
            for metric in METRICS:
                ratio = after[metric] / before[metric] if before[metric] else float("nan")
                print(f"{metric:<18}  {before[metric]:>9.1f}  {after[metric]:>9.1f}  {ratio:>6.2f}")
        else:
            for metric in METRICS:
                print(f"{metric:<18}  {after[metric]:>9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
