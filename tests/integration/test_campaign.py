"""Campaigns that scale and survive: campaign files, ledger recovery, SIGKILL, faults, Ray, decisiveness.

The model here is a loopback OpenAI-compatible server of our own (failforge.testing) so that hundreds
of attempts run in seconds; the environment, harness, replay and filters are all real (AgentDojo).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ledger_reads import finished_attempts

from _required import require
from failforge.campaign import CampaignConfig, ResolvedModels, load_campaign, run_campaign
from failforge.errors import ConfigError
from failforge.judgement import writes_after
from failforge.llm import ModelEndpoint
from failforge.testing import FaultPlan, LoopbackModelServer
from failforge.testing.oracle_policy import oracle_replay_policy
from failforge.trajectory import load_jsonl, write_jsonl


@pytest.fixture(scope="module")
def seeds_file(tmp_path_factory, all_oracle_seeds) -> Path:
    path = tmp_path_factory.mktemp("seeds") / "banking_slack.jsonl"
    write_jsonl(path, [s for s in all_oracle_seeds if s.task.suite in ("banking", "slack") and s.outcome.success])
    return path


def _resolved(server: LoopbackModelServer, timeout: float = 30.0) -> ResolvedModels:
    endpoint = ModelEndpoint(
        base_url=server.base_url, model="loopback", api_key_env=None, timeout=timeout, max_attempts=6
    )
    return ResolvedModels(agent=endpoint, guide=endpoint)


def _records(out: Path) -> dict[str, list[dict]]:
    result = {}
    for name in ("gold.jsonl", "rejected.jsonl", "failed.jsonl"):
        path = out / name
        text = path.read_text() if path.exists() else ""
        assert text == "" or text.endswith("\n"), f"{name} has a torn last line"
        result[name] = [json.loads(line) for line in text.splitlines()]
    return result


def _attempt_ids(records: dict[str, list[dict]]) -> list[str]:
    return [r.get("attempt_id") or r["provenance"]["attempt_id"] for rows in records.values() for r in rows]


def test_campaign_file_resolves_paths_and_reports_bad_fields(tmp_path, seeds_file):
    good = tmp_path / "c.toml"
    good.write_text(
        f'seeds = ["{seeds_file}"]\noutput = "out"\nconcurrency = 4\n[plan]\nmodes = ["r.3", "A.5"]\nsteps_per_seed ='
        " 1\n[filters.decisiveness]\nenabled = true\nk = 2\n"
    )
    config = load_campaign(good)
    assert (
        config.output == str(tmp_path / "out")
        and config.plan.modes == ["R.3", "A.5"]
        and config.filters.decisiveness.original_k == 2 == config.filters.decisiveness.injected_k
    )
    assert config.config_hash() == load_campaign(good).config_hash()
    bad = tmp_path / "bad.toml"
    bad.write_text('seeds = ["x"]\noutput = "o"\n[plan]\nsteps_per_seed = 0\n')
    with pytest.raises(ConfigError, match="plan.steps_per_seed"):
        load_campaign(bad)
    unknown = tmp_path / "unknown.toml"
    unknown.write_text('seeds = ["x"]\noutput = "o"\n[plan]\nmodes = ["Z.9"]\n')
    with pytest.raises(ConfigError):
        load_campaign(unknown)


def _campaign_toml(path: Path, seeds: Path, server: LoopbackModelServer, **extra: object) -> Path:
    lines = [f'seeds = ["{seeds}"]', 'output = "out"', 'executor = "local"']
    lines += [f"{k} = {json.dumps(v)}" for k, v in extra.items()]
    lines += [
        "[agent]",
        f'base_url = "{server.base_url}"',
        'model = "loopback"',
        'api_key_env = "NO_KEY_NEEDED"',
        "timeout = 5.0",
    ]
    lines += ["[plan]", "steps_per_seed = 2", "modes_per_step = 2"]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
def test_sigkill_at_five_ledger_states_loses_and_duplicates_nothing(tmp_path, seeds_file):
    """Killed with SIGKILL each time the ledger shows another batch of attempts finished, so every run
    of this test exercises the same states on any machine (no sleeps deciding when to kill)."""
    env = dict(os.environ, PYTHONHASHSEED="0", COLUMNS="160")
    with LoopbackModelServer(latency=0.05) as server:
        campaign = _campaign_toml(tmp_path / "c.toml", seeds_file, server, concurrency=4)
        command = [sys.executable, "-m", "failforge", "generate", str(campaign)]
        ledger = tmp_path / "out" / "ledger.sqlite"
        for kill_at in (3, 12, 25, 40, 60):
            proc = subprocess.Popen(
                command,
                cwd=tmp_path,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            deadline = time.monotonic() + 600
            while finished_attempts(ledger) < kill_at:
                if proc.poll() is not None:
                    pytest.fail(
                        f"the campaign ended before {kill_at} attempts were finished: {proc.stderr.read()[-800:]!r}"
                    )
                assert time.monotonic() < deadline, f"no progress to {kill_at} finished attempts in 600 s"
                time.sleep(0.05)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        final = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200)
        assert final.returncode == 0, final.stderr[-3000:]
    out = tmp_path / "out"
    manifest = json.loads((out / "manifest.json").read_text())
    planned = manifest["planned_attempts"]
    assert planned >= 100
    records = _records(out)
    ids = _attempt_ids(records)
    assert len(ids) == len(set(ids)) == planned
    totals = manifest["result"]["totals"]
    assert manifest["result"]["this_run"]["skipped"] >= 60  # the last run resumed work done before the kills
    assert totals["unfinished"] == 0 and totals["kept"] + totals["rejected"] + totals["failed"] == planned
    assert totals["kept"] == len(records["gold.jsonl"]) and totals["rejected"] == len(records["rejected.jsonl"])
    assert not [
        r for r in records["failed.jsonl"] if r.get("error_kind") == "interrupted"
    ]  # five kills never give an attempt up


@pytest.mark.slow
def test_fault_server_30pct_errors_5pct_hangs_every_attempt_accounted_for(tmp_path, seeds_file):
    faults = FaultPlan(error_rate=0.30, hang_rate=0.05, hang_seconds=20.0, seed=3)
    with LoopbackModelServer(faults=faults) as server:
        config = CampaignConfig(
            seeds=[str(seeds_file)],
            output=str(tmp_path / "out"),
            concurrency=8,
            attempt_deadline=30.0,
            circuit_breaker=0,
            plan={"steps_per_seed": 1, "modes_per_step": 2, "max_seeds": 20},
        )
        summary = run_campaign(config, _resolved(server, timeout=2.0))
        counts = dict(server.counts)
    assert counts["error"] > 0 and counts["hang"] > 0
    records = _records(tmp_path / "out")
    ids = _attempt_ids(records)
    assert len(ids) == len(set(ids)) == summary.planned == summary.kept + summary.rejected + summary.failed
    assert all(r["reasons"] for r in records["rejected.jsonl"])
    for r in records["failed.jsonl"]:
        assert r["error"]["type"] and r["reasons"]
        assert r["error"]["type"] not in ("PromptDrift", "EnvStateDrift")  # faults are infrastructure, never drift
    assert summary.kept + summary.rejected > 0


@pytest.mark.slow
@pytest.mark.parametrize("other", ["process", "ray"])
def test_process_and_ray_executors_produce_the_same_results_as_local(tmp_path, seeds_file, other):
    if other == "ray":
        require("ray")
    results = {}
    with LoopbackModelServer() as server:
        for executor in ("local", other):
            config = CampaignConfig(
                seeds=[str(seeds_file)],
                output=str(tmp_path / executor),
                executor=executor,
                concurrency=2,
                plan={"steps_per_seed": 1, "modes_per_step": 2, "max_seeds": 6},
            )
            run_campaign(config, _resolved(server))
            records = _records(tmp_path / executor)
            results[executor] = {
                (
                    r.get("attempt_id") or r["provenance"]["attempt_id"],
                    name,
                    (
                        json.dumps([s["content"] for s in (r.get("trajectory") or r)["steps"]])
                        if (r.get("trajectory") or r.get("steps"))
                        else ""
                    ),
                )
                for name, rows in records.items()
                for r in rows
            }
    assert results["local"] and results["local"] == results[other]


def test_decisiveness_keeps_a_decisive_injection_and_records_both_rates(tmp_path, banking_seed):
    seeds = tmp_path / "one.jsonl"
    write_jsonl(seeds, [banking_seed])
    with LoopbackModelServer(policy=oracle_replay_policy(banking_seed)) as server:
        config = CampaignConfig(
            seeds=[str(seeds)],
            output=str(tmp_path / "out"),
            plan={"steps_per_seed": 1, "modes_per_step": 1, "modes": ["A.5"]},
            filters={"decisiveness": {"k": 2}},
        )
        summary = run_campaign(config, _resolved(server))
    gold, _ = load_jsonl(tmp_path / "out" / "gold.jsonl")
    assert summary.kept == 1 and len(gold) == 1
    rates = gold[0].provenance["decisiveness"]
    assert rates["checked"] is True and rates["original_success_rate"] == 1.0 and rates["injected_success_rate"] == 0.0
    assert (
        rates["original"]["k"] == 2
        and rates["original"]["successes"] == 2
        and rates["injected"]
        == {
            "k": 2,
            "successes": 0,
            "success_rate": 0.0,
            "temperature": None,
            "first_is_candidate": True,
        }
    )
    assert gold[0].label.filter_verdicts[-1].name == "decisiveness" and gold[0].label.filter_verdicts[-1].passed
    # A.5 is a control error; the impact follows from a state-changing call at or after the decisive step
    # (stored on write)
    label = gold[0].label
    assert label.error_source == "control" and label.impact == (
        "partially irreversible" if writes_after(gold[0], label.decisive_step) else "cost-recoverable"
    )
    card = (tmp_path / "out" / "README.md").read_text()
    assert (
        "k=2 time(s) per (seed, step)" in card and "mean success 1.00 from a_t vs 0.00 from the injected step" in card
    )


def _counting(policy):
    """The policy, counting who it answered: guide (stage 1), steered agent (stage 2), or anything else."""
    calls = {"guide": 0, "steered": 0, "other": 0}

    def counted(body):
        first = str(body["messages"][0].get("content"))
        if "realistic mistakes" in first:
            calls["guide"] += 1
        elif any(m.get("role") == "system" and "Private guidance" in str(m.get("content")) for m in body["messages"]):
            calls["steered"] += 1
        else:
            calls["other"] += 1
        return policy(body)

    return counted, calls


def test_decisiveness_is_on_by_default_and_its_original_arm_is_shared_and_reused(tmp_path, banking_seed):
    """No [filters] in the campaign: the original arm runs, once for the two samples planned at one step,
    is kept in arms.jsonl, and a rerun of the same campaign reuses it instead of running it again."""
    seeds = tmp_path / "one.jsonl"
    write_jsonl(seeds, [banking_seed])
    policy, calls = _counting(oracle_replay_policy(banking_seed))
    out = tmp_path / "out"
    with LoopbackModelServer(policy=policy) as server:
        config = CampaignConfig(
            seeds=[str(seeds)],
            output=str(out),
            guide_kind="rules",
            plan={"steps_per_seed": 1, "modes_per_step": 1, "samples": 2, "modes": ["A.5"]},
        )
        assert config.filters.decisiveness.enabled and config.filters.decisiveness.original_k == 1
        summary = run_campaign(config, _resolved(server))
        arms = [json.loads(line) for line in (out / "arms.jsonl").read_text().splitlines()]
        assert summary.planned == 2 and summary.arms["points"] == 1 and summary.arms["run_now"] == 1 and len(arms) == 1
        assert summary.arms["live_calls_one_per_attempt"] == 2 * summary.arms["live_calls"] > 0
        records = _records(out)
        decided = [r for rows in records.values() for r in rows]
        assert len(decided) == 2
        for r in decided:
            dec = r["provenance"]["decisiveness"]
            assert (
                dec["checked"] is True
                and dec["original"]["key"] == arms[0]["key"]
                and dec["original"]["successes"] == 1
            )
        # The same campaign again, its records gone but arms.jsonl kept: the arm is reused, not re-run.
        for name in ("gold.jsonl", "rejected.jsonl", "failed.jsonl", "ledger.sqlite"):
            (out / name).unlink(missing_ok=True)
        before = dict(calls)
        again = run_campaign(config, _resolved(server))
        assert again.arms["run_now"] == 0 and again.arms["reused"] == 1
        assert len((out / "arms.jsonl").read_text().splitlines()) == 1
        # Only the attempts' own continuations ran: no call with the seed's own step served at t.
        assert calls["steered"] - before["steered"] == 2


def test_decisiveness_rejects_every_attempt_at_a_point_whose_original_arm_fails_without_running_them(
    tmp_path, banking_seed
):
    seeds = tmp_path / "one.jsonl"
    write_jsonl(seeds, [banking_seed])
    policy, calls = _counting(
        lambda body: ("I could not do it.", None)
    )  # the continuing agent never completes the task
    with LoopbackModelServer(policy=policy) as server:
        config = CampaignConfig(
            seeds=[str(seeds)],
            output=str(tmp_path / "out"),
            plan={"steps_per_seed": 1, "modes_per_step": 1, "samples": 2, "modes": ["A.5"]},
        )
        summary = run_campaign(config, _resolved(server))
    records = _records(tmp_path / "out")
    assert summary.kept == 0 and summary.rejected == 2 and summary.arms["run_now"] == 1
    assert calls["guide"] == 0 and calls["steered"] == 0 and calls["other"] >= 1  # the arm alone ran
    assert len(summary.non_decisive) == 1 and "does not decide the outcome" in summary.non_decisive[0]
    for r in records["rejected.jsonl"]:
        assert r["stage"] == "decisiveness" and r["reasons"][0].startswith(
            "decisiveness: original arm: the seed's own step"
        )
        assert "succeeded 0 of 1 time(s)" in r["reasons"][0] and r["trajectory"] is None
    card = (tmp_path / "out" / "README.md").read_text()
    assert "2 attempt(s) at 1 point(s) were rejected without a run" in card


def test_decisiveness_off_only_explicitly_and_then_every_record_says_not_checked(tmp_path, banking_seed):
    seeds = tmp_path / "one.jsonl"
    write_jsonl(seeds, [banking_seed])
    with LoopbackModelServer(policy=oracle_replay_policy(banking_seed)) as server:
        config = CampaignConfig(
            seeds=[str(seeds)],
            output=str(tmp_path / "out"),
            plan={"steps_per_seed": 1, "modes_per_step": 1, "modes": ["A.5"]},
            filters={"decisiveness": {"enabled": False}},
        )
        summary = run_campaign(config, _resolved(server))
    records = _records(tmp_path / "out")
    assert summary.kept == 1 and not (tmp_path / "out" / "arms.jsonl").exists()
    (gold,) = records["gold.jsonl"]
    assert gold["provenance"]["decisiveness"]["checked"] is False
    assert "decisiveness not checked" in gold["provenance"]["decisiveness"]["reason"]
    assert "**not checked**" in (tmp_path / "out" / "README.md").read_text()


def _recovering_policy(seed):
    """The injected step is a wrong argument (A.2) the agent recovers from when sampled (the decisiveness
    arms run at temperature 0.7), but not in the greedy branch: the injection is not what decides."""
    responses = [s.model_call.response["choices"][0]["message"] for s in seed.agent_steps()]

    def policy(body):
        if "realistic mistakes" in str(body["messages"][0].get("content")):
            return "Ask for only the last transaction.", None
        n = sum(1 for m in body["messages"] if m.get("role") == "assistant")
        if any(m.get("role") == "system" and "Private guidance" in str(m.get("content")) for m in body["messages"]):
            # a_t's own call with one argument wrong (A.2): fewer transactions read at t=1, 1.0 paid at t=3
            call = responses[n]["tool_calls"][0]["function"]
            args = json.loads(call["arguments"])
            key = "n" if "n" in args else "amount"
            return None, [
                {
                    "id": "call_wrong",
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps({**args, key: 1})},
                }
            ]
        if body.get("temperature") == 0.7:  # a decisiveness arm: the sampled agent gets it right
            message = responses[min(n, len(responses) - 1)]
            return message.get("content"), message.get("tool_calls")
        return "I could not find the transaction, so I did nothing.", None

    return policy


def test_decisiveness_rejects_an_injection_the_agent_recovers_from(tmp_path, banking_seed):
    """Both arms are really run and decide: at t=1 the injected arm succeeds every time, so that record is
    rejected (skipping the arm and reporting 0.0 would keep it); at t=3 it fails every time and the
    record is kept (an arm that always reported 1.0 would reject it)."""
    seeds = tmp_path / "one.jsonl"
    write_jsonl(seeds, [banking_seed])
    with LoopbackModelServer(policy=_recovering_policy(banking_seed)) as server:
        config = CampaignConfig(
            seeds=[str(seeds)],
            output=str(tmp_path / "out"),
            plan={"steps_per_seed": 2, "modes_per_step": 1, "modes": ["A.2"]},
            filters={"decisiveness": {"k": 2, "temperature": 0.7}},
        )
        summary = run_campaign(config, _resolved(server))
    records = _records(tmp_path / "out")
    assert summary.planned == 2 and summary.kept == 1 and summary.rejected == 1
    # At t=1 a wrong query is recovered from by the next (sampled) step: not decisive, rejected.
    (rejected,) = records["rejected.jsonl"]
    assert rejected["step"] == 1 and rejected["reasons"] == [
        "decisiveness: original arm succeeded 2/2, injected arm 2/2 at T=0.7"
    ]
    # At t=3 the payment itself is wrong (1.0 paid): the sampled agent carries on and the task fails.
    (gold,) = records["gold.jsonl"]
    assert gold["label"]["decisive_step"] == 3
    dec = gold["provenance"]["decisiveness"]
    assert dec["original_success_rate"] == 1.0 and dec["injected_success_rate"] == 0.0
    assert (
        dec["original"]["k"] == 2
        and dec["original"]["temperature"] == 0.7
        and dec["injected"]["k"] == 2
        and not dec["injected"]["first_is_candidate"]
    )
