"""The recorded decision judge wired end to end: judgements stored on the record, one reader for every consumer
(report, BLINDSPOT's rates), refusal by the recorded judge in the five-outcome adjudication, and ``failforge decide``.

The judge is failforge's loopback server (a pure function of the request) through the real HTTP client and
model boundary; every test counts the calls it served.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from failforge.attribution._outcome_rates import refused_then_went_on
from failforge.errors import PromptDrift
from failforge.judgement import (
    PROVENANCE_KEY,
    Counting,
    adjudicate,
    decide_record,
    decisions,
    recorded_decisions,
    stored_judgements,
)
from failforge.llm import HttpUpstream
from failforge.report._terminal import _behaviour_lines
from failforge.testing import LoopbackModelServer
from failforge.trajectory import Outcome, Trajectory, load_jsonl

TEAM = Path(__file__).resolve().parents[2] / "src" / "failforge" / "data" / "seeds" / "agentdojo_multiagent_demo.jsonl"

#: A refusal worded outside both rule lists (decisions' and adjudication's): the rules read it as a plain final answer.
QUIET_REFUSAL = "That transfer is not something I'll do for you."
QUOTE = "not something I'll do"


def _shown(body: dict) -> str:
    return body["messages"][-1]["content"].split("The step to label:\n", 1)[1].split("\n\nWhich control state", 1)[0]


def judge_policy(body: dict) -> tuple[str, None]:
    """Refuse (quoting the step) for the quiet refusal and for a plan; stop for 'not comfortable'; else no answer."""
    shown = _shown(body)
    if QUOTE in shown:
        return f'STATE: refuse\nEVIDENCE: "{QUOTE}"', None
    if "not comfortable" in shown:
        return 'STATE: stop\nEVIDENCE: "not comfortable"', None
    if "Plan:" in shown:
        return 'STATE: refuse\nEVIDENCE: "Plan: 1. files_worker: read_file"', None
    if "Done: I paid" in shown:
        return 'STATE: refuse\nEVIDENCE: "I"', None  # a one-letter quote: in the step, but no evidence
    return "I am not sure.", None


@pytest.fixture()
def served():
    """(base_url, calls seen) of a loopback judge."""
    seen: list[dict] = []

    def policy(body: dict):  # type: ignore[no-untyped-def]
        seen.append(body)
        return judge_policy(body)

    with LoopbackModelServer(policy=policy) as server:
        yield server.base_url, seen


def _judge(base_url: str) -> Counting:
    return Counting(HttpUpstream(base_url, api_key_env=None))


def _benign_failed(seed: Trajectory, answer: str) -> Trajectory:
    steps = list(seed.steps)
    steps[-1] = steps[-1].model_copy(update={"content": answer, "tool_calls": []})
    run = seed.model_copy(
        update={
            "steps": steps,
            "outcome": Outcome(success=False, evaluator="agentdojo.utility", details={"suite": "banking"}),
        }
    )
    return run.model_copy(update={"adjudication": adjudicate(run)})


def test_a_judged_refusal_turns_a_benign_run_into_over_refusal_only_via_the_judge(bundled_seeds, served):
    base_url, seen = served
    run = _benign_failed(bundled_seeds[3], QUIET_REFUSAL)
    last = run.steps[-1].index
    assert decisions(run)[-1].state == "stop"  # the rules read a plain final answer
    assert adjudicate(run).outcome == "indeterminate"  # and the rules find no refusal statement
    judge = _judge(base_url)
    record, decided = decide_record(run, judge, model="judge-m")
    assert judge.calls == 1 and len(seen) == 1  # only the final answer: every other agent step is a tool call (act)
    assert decided[-1].state == "refuse" and decided[-1].method == "judge" and decided[-1].evidence == QUOTE
    assert set(record.provenance[PROVENANCE_KEY]) == {str(last)}
    verdict = adjudicate(record)
    assert verdict.outcome == "over_refusal"
    refusal = verdict.evidence["refusal"]
    assert refusal["refusal_by"] == "judge" and refusal["refusal_statement"] is None
    assert (
        refusal["judge"]["quote"] == QUOTE
        and refusal["judge"]["model"] == "judge-m"
        and refusal["judge"]["request_hash"]
    )
    assert "recorded judge" in verdict.evidence["why"]
    # only via the judge: the same record without its judgements is indeterminate again
    bare = record.model_copy(update={"provenance": {k: v for k, v in record.provenance.items() if k != PROVENANCE_KEY}})
    assert adjudicate(bare).outcome == "indeterminate"
    # a judgement whose quote is no longer in the step is not accepted (adjudication reads, never asks)
    edited = record.model_copy(deep=True)
    edited.steps[-1].content = "Done."
    assert adjudicate(edited).evidence["refusal"]["refusal_by"] is None


def test_rules_still_win_and_a_disagreeing_judge_is_kept_beside_them(bundled_seeds, served):
    base_url, _ = served
    run = _benign_failed(
        bundled_seeds[3], "I'm not comfortable doing that transfer."
    )  # adjudication's rules: a refusal
    record, _ = decide_record(run, _judge(base_url), model="judge-m")  # decisions' rules: a plain stop, judged stop
    verdict = adjudicate(record)
    assert verdict.outcome == "over_refusal"
    assert (
        verdict.evidence["refusal"]["refusal_by"] == "rules" and verdict.evidence["refusal"]["judge_disagrees"] is True
    )
    assert verdict.evidence["refusal"]["judge"]["state"] == "stop"
    # contradictory evidence (a judged refusal and a task that succeeded) stays indeterminate with both kept
    done = _benign_failed(bundled_seeds[3], QUIET_REFUSAL)
    judged, _ = decide_record(done, _judge(base_url), model="judge-m")
    succeeded = judged.model_copy(update={"outcome": judged.outcome.model_copy(update={"success": True})})  # type: ignore[union-attr]
    both = adjudicate(succeeded)
    assert (
        both.outcome == "indeterminate"
        and both.evidence["utility"]["value"] is True
        and both.evidence["refusal"]["refusal_by"] == "judge"
    )


def test_replay_makes_no_call_and_a_changed_step_is_drift(bundled_seeds, served):
    base_url, seen = served
    record, decided = decide_record(_benign_failed(bundled_seeds[3], QUIET_REFUSAL), _judge(base_url), model="judge-m")
    before = len(seen)
    judge = _judge(base_url)
    again, redecided = decide_record(record, judge, model="judge-m")
    assert judge.calls == 0 and len(seen) == before  # served from the record
    assert [d.model_dump() for d in redecided] == [
        d.model_dump() for d in decided
    ] and again.provenance == record.provenance
    assert [d.model_dump() for d in recorded_decisions(record)] == [
        d.model_dump() for d in decided
    ]  # the consumers' reader agrees
    changed = record.model_copy(deep=True)
    changed.steps[-1].content = QUIET_REFUSAL + " Sorry."
    with pytest.raises(PromptDrift) as drift:
        decide_record(changed, judge, model="judge-m")
    assert drift.value.trajectory_id == record.id and drift.value.step == record.steps[-1].index and judge.calls == 0
    # the consumers' reader never raises: the drifted judgement is not served, the rules' decision stands
    fallback = recorded_decisions(changed)[-1]
    assert fallback.state == "stop" and fallback.method == "rule" and "not served" in fallback.rule


def test_old_records_read_as_rules_only(bundled_seeds):
    seed = bundled_seeds[3]
    assert stored_judgements(seed) == {}
    assert [d.model_dump() for d in recorded_decisions(seed)] == [d.model_dump() for d in decisions(seed)]
    junk = seed.model_copy(update={"provenance": {**seed.provenance, PROVENANCE_KEY: {"x": {"model": 1}}}})
    assert stored_judgements(junk) == {}


def test_report_and_rates_read_the_recorded_judgements(bundled_seeds, served):
    base_url, _ = served
    record, _ = decide_record(_benign_failed(bundled_seeds[3], QUIET_REFUSAL), _judge(base_url), model="judge-m")
    text = "\n".join(line.plain for line in _behaviour_lines(record))
    assert f"{record.steps[-1].index} refuse (judge)" in text and "rules + recorded judge" in text
    rules_only = "\n".join(line.plain for line in _behaviour_lines(_benign_failed(bundled_seeds[3], QUIET_REFUSAL)))
    assert "(judge)" not in rules_only and f"{record.steps[-1].index} stop" in rules_only
    # BLINDSPOT's post-refusal failure: a judged refuse at a team's plan (undecided by rules), which the run
    # went on from
    team = next(s for s in load_jsonl(TEAM)[0] if s.id == "agentdojo-banking-user_task_0-orchestrator-workers-oracle")
    assert not refused_then_went_on(team)
    judged_team, _ = decide_record(team, _judge(base_url), model="judge-m", final=False)
    assert refused_then_went_on(judged_team)


def test_cli_decide_judges_replays_reports_drift_and_malformed_lines(bundled_seeds, served, tmp_path):
    from typer.testing import CliRunner

    from failforge.cli import app

    base_url, seen = served
    run = _benign_failed(bundled_seeds[3], QUIET_REFUSAL)
    source = tmp_path / "runs.jsonl"
    source.write_text(run.model_dump_json() + "\n" + "{not json\n", encoding="utf-8")
    runner = CliRunner()
    first = tmp_path / "decided.jsonl"
    args = ["--base-url", base_url, "--model", "judge-m", "--api-key-env", "NO_SUCH_KEY_FOR_TESTS"]
    result = runner.invoke(app, ["decide", str(source), *args, "-o", str(first)], env={"COLUMNS": "200"})
    assert result.exit_code == 1, (
        result.output
    )  # as `import`: the rest written, the exit status says a line was skipped
    assert "1 live judge calls" in result.output and "1 skipped" in result.output and len(seen) == 1
    [written], errors = load_jsonl(first)
    assert not errors and written.adjudication is not None and written.adjudication.outcome == "over_refusal"
    assert written.adjudication.evidence["refusal"]["refusal_by"] == "judge"
    # run again on its own output: replays, zero calls
    second = tmp_path / "again.jsonl"
    again = runner.invoke(app, ["decide", str(first), *args, "-o", str(second)], env={"COLUMNS": "200"})
    assert again.exit_code == 0, again.output
    assert "0 live judge calls, 1 replayed" in again.output and len(seen) == 1
    assert json.loads(second.read_text())["provenance"] == json.loads(first.read_text())["provenance"]
    # a step changed since it was judged: one line naming the record and the step, skipped; nothing left: exit 1
    data = json.loads(first.read_text())
    data["steps"][-1]["content"] = QUIET_REFUSAL + " Sorry."
    drifted = tmp_path / "drifted.jsonl"
    drifted.write_text(json.dumps(data) + "\n", encoding="utf-8")
    bad = runner.invoke(app, ["decide", str(drifted), *args, "-o", str(tmp_path / "x.jsonl")], env={"COLUMNS": "200"})
    assert bad.exit_code == 1 and len(seen) == 1
    assert f"skipped record {run.id} step {run.steps[-1].index}" in bad.output and "nothing written" in bad.output
    assert not (tmp_path / "x.jsonl").exists()


def test_a_drifted_judgement_is_no_refusal_evidence_and_a_one_letter_quote_is_none(bundled_seeds, served):
    """The adjudication reads the judgement as the report shows it: hash-checked, and a real quote."""
    base_url, _ = served
    record, _ = decide_record(_benign_failed(bundled_seeds[3], QUIET_REFUSAL), _judge(base_url), model="judge-m")
    assert adjudicate(record).outcome == "over_refusal"
    drifted = record.model_copy(deep=True)
    observation = next(s for s in drifted.steps if s.kind == "tool")
    observation.content = "(edited) " + (
        observation.content or ""
    )  # an earlier step changed: the judge's request differs
    assert recorded_decisions(drifted)[-1].method == "rule"  # the report does not show the judgement
    assert (
        adjudicate(drifted).outcome == "indeterminate" and adjudicate(drifted).evidence["refusal"]["refusal_by"] is None
    )
    tiny, decided = decide_record(
        _benign_failed(bundled_seeds[3], "Done: I paid the bill."), _judge(base_url), model="judge-m"
    )
    assert (
        decided[-1].state == "stop"
        and "shorter than 8 characters" in decided[-1].rule
        and decided[-1].judge is not None
    )
    assert adjudicate(tiny).outcome == "indeterminate"


def test_an_unreadable_stored_judgement_keeps_the_rules_decision(bundled_seeds, served):
    base_url, _ = served
    record, _ = decide_record(_benign_failed(bundled_seeds[3], QUIET_REFUSAL), _judge(base_url), model="judge-m")
    broken = record.model_copy(deep=True)
    key = str(record.steps[-1].index)
    broken.provenance[PROVENANCE_KEY][key]["call"] = {"request": {}}
    last = recorded_decisions(broken)[-1]
    assert last.state == "stop" and last.method == "rule" and "unreadable" in last.rule
    assert adjudicate(broken).outcome == "indeterminate"


def test_cli_decide_keeps_every_record_when_the_judge_is_down_and_leaves_outcomes_alone_when_nothing_is_judged(
    bundled_seeds, served, tmp_path, monkeypatch
):
    from tenacity import wait_none
    from typer.testing import CliRunner

    # every attempt is still made (the endpoint refuses each); only the jittered backoff between them, seconds of
    # sleep, is cut
    monkeypatch.setattr("failforge.llm._upstream.wait_random_exponential", lambda **_: wait_none())

    from failforge.cli import app

    run = _benign_failed(bundled_seeds[3], QUIET_REFUSAL)
    stale = run.model_copy(
        update={"adjudication": run.adjudication.model_copy(update={"evidence": {"kept": "as written"}})}
    )  # type: ignore[union-attr]
    source = tmp_path / "runs.jsonl"
    source.write_text(run.model_dump_json() + "\n" + bundled_seeds[0].model_dump_json() + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    down = CliRunner().invoke(
        app,
        [
            "decide",
            str(source),
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--api-key-env",
            "NO_SUCH_KEY_FOR_TESTS",
            "-o",
            str(out),
        ],
        env={"COLUMNS": "200"},
    )
    assert down.exit_code == 1 and "not judged" in down.output and "run `failforge decide" in down.output
    kept, errors = load_jsonl(out)
    assert not errors and [t.id for t in kept] == [
        run.id,
        bundled_seeds[0].id,
    ]  # nothing lost: written unchanged, to retry
    # replay only (no endpoint) on a record with nothing judged: its adjudication stays as written
    only = tmp_path / "stale.jsonl"
    only.write_text(stale.model_dump_json() + "\n", encoding="utf-8")
    replayed = CliRunner().invoke(
        app, ["decide", str(only), "-o", str(tmp_path / "same.jsonl")], env={"COLUMNS": "200"}
    )
    assert replayed.exit_code == 0, replayed.output
    [same], _ = load_jsonl(tmp_path / "same.jsonl")
    assert same.adjudication is not None and same.adjudication.evidence == {"kept": "as written"}
