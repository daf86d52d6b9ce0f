#!/usr/bin/env python3
"""How many of the embedded model's answers failforge can use, per method that parses one.

No arguments; starts the embedded llama.cpp server (SmolLM2-135M) itself and runs, on a few records:

- the attribution methods (all-at-once, step-by-step, binary-search, hybrid, rcta, auditor) on the shortest
  Who&When Algorithm-Generated logs of the test fixtures (cut to short prompts): a record is *valid* when its
  prediction has an agent, a step and a mode (each read from the judge's reply, never guessed), and the scores
  of the valid ones are agent / step / mode accuracy against the gold;
- the conformance judge and the decision judge on the bundled AgentDojo team seed: valid when the
  answer names yes/no (a state of the six);
- the guide on the same seed: valid when the reply reads as a note or as NOT FEASIBLE (its "kept" count says
  how many notes passed the note checks).

One line per method, ``METHOD ... valid K/N``, then the scores. Runs on the code it is imported from, so the
same script measures another checkout: ``PYTHONPATH=/other/checkout/src python3 scripts/bench_valid_outputs.py``.
Under 10 minutes on 2 cores shared with other work. Timings are printed as seconds, for comparison on one machine only.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "attribution" / "who_and_when" / "Algorithm-Generated"
TEAM_SEEDS = ROOT / "src" / "failforge" / "data" / "seeds" / "agentdojo_multiagent_demo.jsonl"
METHODS = ("all-at-once", "step-by-step", "binary-search", "hybrid", "rcta", "auditor")
RECORDS = 2
#: Short prompts: the shortest logs, cut to this many characters of trajectory (a loaded 2-core machine
#: evaluates ~30-500 prompt tokens a second, so a full 9,000-character prompt costs up to two minutes).
BUDGET_CHARS = 2400
JUDGE_CALLS = 4


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--records", type=int, default=RECORDS, help="Who&When logs per attribution method (the shortest)"
    )
    return parser


def shortest_records(n: int) -> list[Any]:
    from failforge.attribution import summarise
    from failforge.plugins import importers

    records, _ = summarise(importers.get("whowhen")(FIXTURES))
    return sorted(records, key=lambda r: (len(r.candidate_steps()), r.id))[:n]


def attribution(endpoint: Any, work: Path, n: int = RECORDS) -> None:
    from failforge.attribution._predictions import load_predictions
    from failforge.attribution._prompts import PromptConfig
    from failforge.attribution._protocols import normalise_agent
    from failforge.attribution._run import AttributeConfig, run_attribution

    records = shortest_records(n)
    gold = {r.id: r.gold for r in records}
    for method in METHODS:
        t0 = time.perf_counter()
        out = work / method
        config = AttributeConfig(
            method=method,
            judge_model=endpoint.model,
            judge_base_url=endpoint.base_url,
            max_tokens=256,
            prompt=PromptConfig(budget_chars=BUDGET_CHARS, max_step_chars=300),
        )
        summary = run_attribution(records, config, out, endpoint=endpoint)
        predictions, _ = load_predictions(out / "predictions.jsonl")
        valid = [p for p in predictions if p.agent and p.step is not None and p.mode]
        agent = sum(normalise_agent(p.agent) == normalise_agent(gold[p.record_id].agent) for p in valid)
        step = sum(p.step == gold[p.record_id].step for p in valid)
        mode = sum(p.mode == gold[p.record_id].mode for p in valid)
        manifest = json.loads((out / "manifest.json").read_text())
        how = (manifest.get("structured_output") or {}).get("mechanism", "free text (no probe)")
        print(
            f"{method:<15} valid {len(valid)}/{len(records)}  calls {summary.calls}  failed {summary.failed}  asked as:"
            f" {how}  {time.perf_counter() - t0:.0f}s",
            flush=True,
        )
        if valid:
            print(
                f"{'':<15} scores of the valid ones: agent {agent}/{len(valid)}  step {step}/{len(valid)}  mode"
                f" {mode}/{len(valid)}",
                flush=True,
            )
        for p in predictions:
            if p not in valid:
                print(f"{'':<15} {p.record_id}: {'; '.join(p.problems)[:160] or 'no field'}", flush=True)


def team_seed() -> Any:
    from failforge.trajectory import load_jsonl

    seeds = load_jsonl(TEAM_SEEDS)[0]
    return next(s for s in seeds if s.id.startswith("agentdojo-banking-user_task_0"))


def judges(endpoint: Any) -> None:
    from failforge.judgement import decision_request, judge_request, judged_decision, recorded_call, run_judge
    from failforge.taxonomy import get_mode

    seed = team_seed()
    upstream = endpoint.upstream()
    agent_steps = [s for s in seed.steps if s.kind == "agent"][:JUDGE_CALLS]
    try:
        t0 = time.perf_counter()
        verdicts = []
        for i, step in enumerate(agent_steps):
            mode = get_mode(("R.1", "R.4", "V.2", "PL.1", "C.2", "R.2")[i % 6])
            verdicts.append(
                run_judge(
                    upstream, judge_request(seed, step, step.index, mode, model=endpoint.model), record_id=f"bench-{i}"
                )
            )
        ok = [v for v in verdicts if v.exhibited is not None]
        print(
            f"{'conformance':<15} valid {len(ok)}/{len(verdicts)}  (yes {sum(bool(v.exhibited) for v in ok)}) "
            f" {time.perf_counter() - t0:.0f}s",
            flush=True,
        )
        t0 = time.perf_counter()
        decided = []
        for step in agent_steps:
            request = decision_request(seed, step, model=endpoint.model)
            try:
                from failforge.judgement import DecisionAnswer
                from failforge.llm._structured import with_structured

                request = with_structured(request, DecisionAnswer, upstream)
            except ImportError:  # a checkout without structured answers asks in free text
                pass
            decided.append(
                judged_decision(step, recorded_call(upstream, request, run_id=f"bench-decision-{step.index}"))
            )
        named = [d for d in decided if d.judge is not None and d.judge.state is not None]
        accepted = [d for d in decided if d.state != "undecided"]
        print(
            f"{'decision-judge':<15} valid {len(named)}/{len(decided)}  (accepted with a quote found in the step:"
            f" {len(accepted)})  {time.perf_counter() - t0:.0f}s",
            flush=True,
        )
    finally:
        upstream.close()


def guide(endpoint: Any) -> None:
    from failforge.injection import guide_request, write_steering_note
    from failforge.llm import BoundedResponder
    from failforge.taxonomy import get_mode

    seed = team_seed()
    upstream = endpoint.upstream()
    t0 = time.perf_counter()
    results = []
    try:
        points = [s.index for s in seed.steps if s.kind == "agent"][:JUDGE_CALLS]
        for i, t in enumerate(points):
            mode = get_mode(("A.2", "R.1", "PL.1", "A.5", "V.2", "R.4")[i % 6])
            results.append(
                write_steering_note(
                    BoundedResponder(upstream),
                    guide_request(seed, t, mode, model=endpoint.model, temperature=0.0, seed_value=i),
                    mode,
                )
            )
    finally:
        upstream.close()
    read = [g for g in results if g.feasible or g.reason != "guide model returned an empty note"]
    print(
        f"{'guide-note':<15} valid {len(read)}/{len(results)}  (notes kept by the note checks:"
        f" {sum(g.feasible for g in results)})  {time.perf_counter() - t0:.0f}s",
        flush=True,
    )
    for g in results:
        print(f"{'':<15} {'kept' if g.feasible else 'rejected'}: {(g.note or g.reason)[:110]!r}", flush=True)


def main() -> int:
    args = arguments().parse_args()
    import failforge
    from failforge.llm import LOCAL_MODEL_NAME, LocalModelServer, ModelEndpoint

    print(
        f"failforge from {Path(inspect.getfile(failforge)).parent}; the embedded model {LOCAL_MODEL_NAME}", flush=True
    )
    started = time.perf_counter()
    # one thread: the same server on any checkout (llama.cpp threads spin on a loaded machine;
    # see _local.default_threads)
    with (
        LocalModelServer(n_ctx=8192, n_threads=1) as server,
        tempfile.TemporaryDirectory(prefix="bench-valid-") as work,
    ):
        endpoint = ModelEndpoint(base_url=server.base_url, model=LOCAL_MODEL_NAME, api_key_env=None)
        attribution(endpoint, Path(work), args.records)
        judges(endpoint)
        guide(endpoint)
    print(f"total {time.perf_counter() - started:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
