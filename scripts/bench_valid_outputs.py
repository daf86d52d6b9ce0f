#!/usr/bin/env python3
"""How many of the embedded model's answers failforge can use, per method that parses one.

No arguments; starts the embedded llama.cpp server (SmolLM2-135M) itself and runs, round by round (one item per
method per round, so every method gets the same number of items whenever the time budget ends the run):

- the attribution methods (all-at-once, step-by-step, binary-search, hybrid, rcta, auditor) on the shortest
  Who&When Algorithm-Generated logs of the test fixtures (cut to short prompts): a record is *valid* when its
  prediction has an agent, a step and a mode (each read from the judge's reply, never guessed), and the scores
  of the valid ones are agent / step / mode accuracy against the gold;
- the conformance judge and the decision judge on the agent steps of the bundled AgentDojo team seeds: valid
  when the answer names yes/no (a state of the six);
- the guide on the same steps: valid when the reply reads as a note or as NOT FEASIBLE (its "kept" count says
  how many notes passed the note checks).

One line per method, ``METHOD ... valid K/N``, then the scores. Valid means the answer parses under its
schema; whether it is *right* is the score line (the 135M model is mostly wrong). Runs on the code it is
imported from, so the same script measures another checkout:
``PYTHONPATH=/other/checkout/src python3 scripts/bench_valid_outputs.py``. Stops starting rounds when its time
budget (``--minutes``, 9) is spent (checked before each item, so the last round may give some methods one item
fewer), so it ends in about 10 minutes on 2 cores shared with other work; how many rounds fit depends on the
load. After each round it prints where the round's time went, per method. Measured on this 2-core machine at a
load of 3-6: a round takes 215-275 s (~14,000 prompt tokens, nearly all of it prompt evaluation; the auditor
55-80 s, RCTA 30-55 s, all-at-once 30-45 s for one ~1,550-token prompt, most of it the 18-mode menu), so the
default budget fits 2-3 rounds and 10 items per method take ~40 minutes (``--minutes 45``). Timings are printed
as seconds, for comparison on one machine only.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "attribution" / "who_and_when" / "Algorithm-Generated"
TEAM_SEEDS = ROOT / "src" / "failforge" / "data" / "seeds" / "agentdojo_multiagent_demo.jsonl"
METHODS = ("all-at-once", "step-by-step", "binary-search", "hybrid", "rcta", "auditor")
#: Items per method at most (rounds); the time budget usually ends the run first on a loaded machine.
RECORDS = 10
MINUTES = 9.0
#: Short prompts: the shortest logs, cut to this many characters of trajectory (a loaded 2-core machine
#: evaluates as few as 15-45 prompt tokens a second, so a full 9,000-character prompt costs minutes).
BUDGET_CHARS = 1600
MAX_STEP_CHARS = 240
#: The judges' and the guide's modes, one per item in turn.
JUDGE_MODES = ("R.1", "R.4", "V.2", "PL.1", "C.2", "R.2")
GUIDE_MODES = ("A.2", "R.1", "PL.1", "A.5", "V.2", "R.4")


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--records", type=int, default=RECORDS, help="items per method at most (rounds)")
    parser.add_argument("--minutes", type=float, default=MINUTES, help="start no round after this many minutes")
    parser.add_argument("--budget-chars", type=int, default=BUDGET_CHARS, help="trajectory characters per prompt")
    return parser


@dataclass
class Tally:
    """One method's items: how many, how many valid, what the valid ones got right, and the invalid ones' problems."""

    name: str
    n: int = 0
    valid: int = 0
    right: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    tokens: list[int] = field(default_factory=lambda: [0, 0])
    seconds: float = 0.0
    asked_as: str = ""
    problems: list[str] = field(default_factory=list)

    def add(self, valid: bool, right: dict[str, bool], calls: int, seconds: float, problem: str = "") -> None:
        self.n += 1
        self.valid += valid
        self.calls += calls
        self.seconds += seconds
        for key, ok in right.items():
            self.right[key] = self.right.get(key, 0) + int(valid and ok)
        if not valid:
            self.problems.append(problem or "no field")

    def line(self) -> str:
        rate = f"{100 * self.valid / self.n:.0f}%" if self.n else "-"
        scores = "  ".join(f"{k} {v}/{self.valid}" for k, v in self.right.items())
        how = f"  asked as: {self.asked_as}" if self.asked_as else ""
        if self.tokens[0]:
            how += f"  tokens in/out {self.tokens[0]}/{self.tokens[1]}"
        return (
            f"{self.name:<15} valid {self.valid}/{self.n} ({rate})  calls {self.calls}  {self.seconds:.0f}s{how}"
            + (f"\n{'':<15} among the valid: {scores}" if scores else "")
            + "".join(f"\n{'':<15} invalid: {p[:160]}" for p in self.problems)
        )


def shortest_records(n: int) -> list[Any]:
    from failforge.attribution import summarise
    from failforge.plugins import importers

    records, _ = summarise(importers.get("whowhen")(FIXTURES))
    return sorted(records, key=lambda r: (len(r.candidate_steps()), r.id))[:n]


def attribution_unit(endpoint: Any, work: Path, method: str, record: Any, budget_chars: int, tally: Tally) -> None:
    from failforge.attribution._predictions import load_predictions
    from failforge.attribution._prompts import PromptConfig
    from failforge.attribution._protocols import normalise_agent
    from failforge.attribution._run import AttributeConfig, run_attribution

    t0 = time.perf_counter()
    out = work / method / record.id.replace("/", "_")
    config = AttributeConfig(
        method=method,
        judge_model=endpoint.model,
        judge_base_url=endpoint.base_url,
        max_tokens=256,
        prompt=PromptConfig(budget_chars=budget_chars, max_step_chars=MAX_STEP_CHARS),
    )
    try:
        summary = run_attribution([record], config, out, endpoint=endpoint)
    except Exception as exc:  # a method that crashes on a record is an invalid answer, said as such
        tally.add(False, {}, 0, time.perf_counter() - t0, f"{record.id}: {type(exc).__name__}: {exc}")
        return
    predictions, _ = load_predictions(out / "predictions.jsonl")
    if not predictions:
        tally.add(False, {}, summary.calls, time.perf_counter() - t0, f"{record.id}: no prediction written")
    manifest = json.loads((out / "manifest.json").read_text())
    tally.asked_as = (manifest.get("structured_output") or {}).get("mechanism", "free text (no probe)")
    gold = record.gold
    for p in predictions:
        tally.tokens[0] += p.prompt_tokens or 0
        tally.tokens[1] += p.completion_tokens or 0
        valid = bool(p.agent and p.step is not None and p.mode)
        right = {
            "agent": normalise_agent(p.agent or "") == normalise_agent(gold.agent or ""),
            "step": p.step == gold.step,
            "mode": p.mode == gold.mode,
        }
        tally.add(valid, right, summary.calls, time.perf_counter() - t0, f"{record.id}: {'; '.join(p.problems)}")


def judge_items() -> list[tuple[Any, Any]]:
    """(seed, agent step) of the bundled AgentDojo team seeds, interleaved so the first items span both seeds."""
    from itertools import chain, zip_longest

    from failforge.trajectory import load_jsonl

    seeds = load_jsonl(TEAM_SEEDS)[0]
    per_seed = [[(seed, step) for step in seed.steps if step.kind == "agent"] for seed in seeds]
    return [item for item in chain.from_iterable(zip_longest(*per_seed)) if item is not None]


def conformance_unit(upstream: Any, endpoint: Any, i: int, item: tuple[Any, Any], tally: Tally) -> None:
    from failforge.judgement import judge_request, run_judge
    from failforge.taxonomy import get_mode

    seed, step = item
    t0 = time.perf_counter()
    mode = get_mode(JUDGE_MODES[i % len(JUDGE_MODES)])
    verdict = run_judge(
        upstream, judge_request(seed, step, step.index, mode, model=endpoint.model), record_id=f"bench-{i}"
    )
    valid = verdict.exhibited is not None
    tally.add(valid, {"yes": bool(verdict.exhibited)}, 1, time.perf_counter() - t0, f"{seed.id}@{step.index}")


def decision_unit(upstream: Any, endpoint: Any, i: int, item: tuple[Any, Any], tally: Tally) -> None:
    from failforge.judgement import DecisionAnswer, decision_request, judged_decision, recorded_call
    from failforge.llm._structured import with_structured

    seed, step = item
    t0 = time.perf_counter()
    request = with_structured(decision_request(seed, step, model=endpoint.model), DecisionAnswer, upstream)
    decided = judged_decision(step, recorded_call(upstream, request, run_id=f"bench-decision-{i}"))
    valid = decided.judge is not None and decided.judge.state is not None
    right = {"accepted with a quote found in the step": decided.state != "undecided"}
    tally.add(valid, right, 1, time.perf_counter() - t0, f"{seed.id}@{step.index}")


def guide_unit(upstream: Any, endpoint: Any, i: int, item: tuple[Any, Any], tally: Tally) -> None:
    from failforge.injection import guide_request, write_steering_note
    from failforge.llm import BoundedResponder
    from failforge.taxonomy import get_mode

    seed, step = item
    t0 = time.perf_counter()
    mode = get_mode(GUIDE_MODES[i % len(GUIDE_MODES)])
    result = write_steering_note(
        BoundedResponder(upstream),
        guide_request(seed, step.index, mode, model=endpoint.model, temperature=0.0, seed_value=i),
        mode,
    )
    valid = result.feasible or result.reason != "guide model returned an empty note"
    tally.add(
        valid,
        {"kept by the note checks": result.feasible},
        1,
        time.perf_counter() - t0,
        f"{seed.id}@{step.index}: {result.reason}",
    )


def main() -> int:
    args = arguments().parse_args()
    import failforge
    from failforge.llm import LOCAL_MODEL_NAME, LocalModelServer, ModelEndpoint

    print(
        f"failforge from {Path(inspect.getfile(failforge)).parent}; the embedded model {LOCAL_MODEL_NAME}", flush=True
    )
    started = time.perf_counter()
    budget = started + 60 * args.minutes
    records = shortest_records(args.records)
    items = judge_items()[: args.records]
    tallies = {name: Tally(name) for name in (*METHODS, "conformance", "decision-judge", "guide-note")}
    # one thread: the same server on any checkout (llama.cpp threads spin on a loaded machine;
    # see _local.default_threads)
    with (
        LocalModelServer(n_ctx=8192, n_threads=1) as server,
        tempfile.TemporaryDirectory(prefix="bench-valid-") as work,
    ):
        endpoint = ModelEndpoint(base_url=server.base_url, model=LOCAL_MODEL_NAME, api_key_env=None)
        upstream = endpoint.upstream()
        units: dict[str, Callable[[int], None]] = {
            **{
                m: (lambda i, m=m: attribution_unit(endpoint, Path(work), m, records[i], args.budget_chars, tallies[m]))
                for m in METHODS
            },
            "conformance": lambda i: conformance_unit(upstream, endpoint, i, items[i], tallies["conformance"]),
            "decision-judge": lambda i: decision_unit(upstream, endpoint, i, items[i], tallies["decision-judge"]),
            "guide-note": lambda i: guide_unit(upstream, endpoint, i, items[i], tallies["guide-note"]),
        }
        try:
            for i in range(max(len(records), len(items))):
                round_started, spent = time.perf_counter(), {name: t.seconds for name, t in tallies.items()}
                for name, unit in units.items():
                    if time.perf_counter() > budget:
                        break
                    if i < (len(records) if name in METHODS else len(items)):
                        before = tallies[name].valid
                        unit(i)
                        print(
                            f"  round {i + 1} {name}: {'valid' if tallies[name].valid > before else 'INVALID'}"
                            f" ({time.perf_counter() - started:.0f}s)",
                            flush=True,
                        )
                # where a round's time goes: each method's seconds in it, the slowest first
                parts = sorted(
                    ((t.seconds - spent[n], n) for n, t in tallies.items() if t.seconds > spent[n]), reverse=True
                )
                print(
                    f"  round {i + 1} took {time.perf_counter() - round_started:.0f}s: "
                    + ", ".join(f"{n} {sec:.0f}s" for sec, n in parts),
                    flush=True,
                )
                if time.perf_counter() > budget:
                    print(f"time budget ({args.minutes:g} min) spent in round {i + 1}", flush=True)
                    break
        finally:
            upstream.close()
    for tally in tallies.values():
        print(tally.line(), flush=True)
    print(f"total {time.perf_counter() - started:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
