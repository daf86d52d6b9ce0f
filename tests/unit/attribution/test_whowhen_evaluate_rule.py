"""failforge's "substring rule" figure equals what Who&When's own ``evaluate.py`` computes on the same
predictions, on complete and on incomplete predictions.

The oracle below ports the logic of ``Automated_FA/evaluate.py`` of ag2ai/Agents_Failure_Attribution at
commit f4d2b6da464a826580e59b3a0eae15ea2d642d7c (the file last changed in aeffbf5c, 2025-04-30), the
repository the Who&When data here comes from. It works on what that script works on: the text log
``inference.py`` prints (one ``Prediction for N.json:`` block per prediction: the judge's reply verbatim
for all-at-once; ``Agent Name: ... / Step Number: ...`` lines for step-by-step) and a folder of labelled
``N.json`` logs. Its steps, in the script's order:

1. cut the log into blocks with ``Prediction for ([^:]+\\.json):(.*?)(?=Prediction for|\\Z)`` (DOTALL);
2. keep a block only when both ``Agent Name:\\s*([\\w_]+)`` and ``Step Number:\\s*(\\d+)`` are found in it
   (re.search, IGNORECASE); a kept block replaces an earlier one of the same file, a dropped one nothing;
3. for each kept block whose file exists in the folder: ``str(mistake_agent) in predicted_agent`` is a
   right agent, ``str(mistake_step) in predicted_step`` a right step;
4. accuracy = right / (number of ``*.json`` files in the folder) * 100.

The data folder is one half of Who&When (the file names of the halves collide), so the oracle runs once
per half and the counts are added, which over all 184 records is the same fraction failforge reports.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from failforge.attribution import summarise
from failforge.attribution._metrics import score
from failforge.attribution._parse import parse_all_at_once
from failforge.attribution._predictions import Prediction
from failforge.plugins import importers

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "attribution"
WHO_AND_WHEN = FIXTURES / "who_and_when"
AAO = "all-at-once/answer/menu"
SBS = "step-by-step/answer/menu"


# --- the oracle: evaluate.py's logic ---------------------------------------------------------------


def oracle_read(log: str) -> dict[str, tuple[str, str]]:
    kept: dict[str, tuple[str, str]] = {}
    for block in re.finditer(r"Prediction for ([^:]+\.json):(.*?)(?=Prediction for|\Z)", log, re.DOTALL):
        body = block.group(2).strip()
        agent = re.search(r"Agent Name:\s*([\w_]+)", body, re.IGNORECASE)
        step = re.search(r"Step Number:\s*(\d+)", body, re.IGNORECASE)
        if agent is not None and step is not None:
            kept[block.group(1).strip()] = (agent.group(1), step.group(1))
    return kept


def oracle_evaluate(kept: dict[str, tuple[str, str]], folder: Path) -> tuple[int, int, int]:
    """(right agents, right steps, files in the folder)."""
    files = [f for f in folder.iterdir() if f.name.endswith(".json") and f.is_file()]
    agents = steps = 0
    for name, (agent, step) in kept.items():
        labelled = folder / name
        if not labelled.exists():
            continue
        data = json.loads(labelled.read_text(encoding="utf-8"))
        if data.get("mistake_agent") is None or data.get("mistake_step") is None:
            continue
        agents += str(data["mistake_agent"]) in agent
        steps += str(data["mistake_step"]) in step
    return agents, steps, len(files)


def inference_log(predictions: list[Prediction], records: dict[str, object], half: str) -> str:
    """The log Who&When's inference.py prints for these predictions of one half (utils.py's print calls)."""
    out = []
    for p in predictions:
        record = records[p.record_id]
        if record.source != f"who_and_when/{half}":  # type: ignore[attr-defined]
            continue
        name = Path(record.origin.path).name  # type: ignore[attr-defined]
        if p.method == AAO:
            out.append(f"Prediction for {name}:\n{p.reply if p.reply else 'Failed to get prediction.'}\n\n{'=' * 50}\n")
        elif p.step is not None:
            out.append(
                f"LLM Evaluation: 1. Yes.\n\nPrediction for {name}: Error found.\nAgent Name: {p.agent}\nStep Number:"
                f" {p.step}\nReason provided by LLM: the step is wrong.\n{'=' * 50}\n"
            )
        else:
            out.append(f"\nNo decisive errors found by step-by-step analysis in file {name}\n{'=' * 50}\n")
    return "\n".join(out)


def oracle(predictions: list[Prediction], records: list) -> tuple[int, int, int]:  # type: ignore[type-arg]
    by_id = {r.id: r for r in records}
    total = (0, 0, 0)
    for half, folder in (("hand_crafted", "Hand-Crafted"), ("algorithm_generated", "Algorithm-Generated")):
        counts = oracle_evaluate(oracle_read(inference_log(predictions, by_id, half)), WHO_AND_WHEN / folder)
        total = tuple(a + b for a, b in zip(total, counts, strict=True))  # type: ignore[assignment]
    return total


# --- predictions ------------------------------------------------------------------------------------


def _judged(record_id: str, reply: str | None, n: int) -> Prediction:
    """An all-at-once prediction as failforge's run stores it: the reply, and what failforge read from it."""
    parsed = parse_all_at_once(reply or "", menu=True)
    return Prediction(
        attempt_id=f"{AAO}::{record_id}#{n}",
        record_id=record_id,
        method=AAO,
        agent=parsed.agent,
        step=parsed.step,
        step_text=parsed.step_text,
        mode=parsed.mode,
        reply=reply,
        problems=parsed.problems,
    )


def _spaced(agent: str) -> str:
    return agent[: len(agent) // 2] + " " + agent[len(agent) // 2 :]


#: Reply layouts, from complete to broken; each is f(agent, step) -> reply (None: the judge call failed).
LAYOUTS = [
    lambda a, s: f"Agent Name: {a}\nStep Number: {s}\nReason for Mistake: the figure is wrong.",
    lambda a, s: f"Agent Name: {a}\nStep Number: -{s}\nReason for Mistake: negative.",
    lambda a, s: f"Agent Name: {a}\nReason for Mistake: no step given.",
    lambda a, s: f"Step Number: {s}\nReason for Mistake: no agent given.",
    lambda a, s: f"**Agent Name:** {a}\n**Step Number:** {s}\n**Reason for Mistake:** bold.",
    lambda a, s: "Agent Name: (Your prediction)\nStep Number: (Your prediction)\nReason for Mistake:",
    lambda a, s: f"Agent Name: {a} (thought)\nStep Number: {s}\nReason for Mistake: a suffix.",
    lambda a, s: f"Agent Name: {a}\nStep Number: {s}0\nReason for Mistake: one digit more.",  # "1" in "10"
    lambda a, s: f"Agent Name: {a}\nStep Number: step {s}\nReason for Mistake: a word before the digits.",
    lambda a, s: f"agent name: {a}\nstep number: {s}\nreason for mistake: lower case.",
    lambda a, s: f"Agent Name:\n{a}\nStep Number:\n{s}\nReason for Mistake: values on the next line.",
    lambda a, s: f"Agent Name: {a}\nStep Number: -1\nStep Number: {s}\nReason for Mistake: corrected itself.",
    lambda a, s: f"Agent Name: {_spaced(a)}\nStep Number: {s}\nReason for Mistake: a space in the name.",
    lambda a, s: f"Agent Name: {a.lower()}\nStep Number: {int(s) + 1}\nReason for Mistake: case and off by one.",
    lambda a, s: "",
    lambda a, s: None,
]
OTHER = 4  # layouts 16..19: a step-by-step hit, a step-by-step miss, no prediction, a duplicate


def crafted(records: list) -> list[Prediction]:  # type: ignore[type-arg]
    """One prediction per record (of ~20 kinds, most with a missing or malformed field), plus duplicates."""
    out: list[Prediction] = []
    for i, record in enumerate(records):
        agent, step = record.gold.agent, record.gold.step_label
        kind = i % (len(LAYOUTS) + OTHER)
        if kind < len(LAYOUTS):
            out.append(_judged(record.id, LAYOUTS[kind](agent, step), 0))
        elif kind == len(LAYOUTS):
            out.append(
                Prediction(
                    attempt_id=f"{SBS}::{record.id}",
                    record_id=record.id,
                    method=SBS,
                    agent=agent,
                    step=record.gold.step,
                    step_text=step,
                )
            )
        elif kind == len(LAYOUTS) + 1:
            out.append(
                Prediction(
                    attempt_id=f"{SBS}::{record.id}",
                    record_id=record.id,
                    method=SBS,
                    problems=["no step judged decisive"],
                )
            )
        elif kind == len(LAYOUTS) + 2:
            continue  # no prediction at all
        else:  # a readable block, then an unreadable one for the same record: evaluate.py keeps the first
            out.append(_judged(record.id, LAYOUTS[0](agent, step), 0))
            out.append(_judged(record.id, LAYOUTS[2](agent, step), 1))
    return out


@pytest.fixture(scope="module")
def records():  # type: ignore[no-untyped-def]
    records, summary = summarise(importers.get("whowhen")(WHO_AND_WHEN))
    assert summary.imported == 184
    return records


def _figures(records, predictions):  # type: ignore[no-untyped-def]
    sub = score(records, predictions, k=5)["upstream_substring"]
    agents, steps, files = oracle(predictions, records)
    assert files == len(records) == sub["n"]
    return sub, (agents, steps, files)


def test_complete_predictions_score_as_evaluate_py_scores_them(records):
    perfect = [_judged(r.id, LAYOUTS[0](r.gold.agent, r.gold.step_label), 0) for r in records]
    sub, (agents, steps, files) = _figures(records, perfect)
    readable = sum(1 for r in records if re.fullmatch(r"[\w_]+", r.gold.agent))  # "Blu-Ray_Expert" reads as "Blu"
    assert (sub["agent_hits_substring"], sub["step_hits_substring"]) == (agents, steps) == (
        readable,
        184,
    ) and readable == 183
    shifted = [
        _judged(r.id, LAYOUTS[0](r.gold.agent, r.gold.step_label + "1"), 0) for r in records
    ]  # "4" in "41": substring credit
    sub, (agents, steps, _) = _figures(records, shifted)
    assert (sub["agent_hits_substring"], sub["step_hits_substring"]) == (agents, steps) and steps == 184
    assert sub["step_accuracy_integer"] == 0.0 and sub["step_inflation_pp"] == 100.0


def test_incomplete_and_malformed_predictions_score_as_evaluate_py_scores_them(records):
    predictions = crafted(records)
    assert 180 <= len(predictions) <= 200
    sub, (agents, steps, files) = _figures(records, predictions)
    print(
        f"\n{len(predictions)} predictions on {files} records: evaluate.py agent {agents} step {steps}; failforge agent"
        f" {sub['agent_hits_substring']} ({sub['agent_accuracy_substring']}%) step {sub['step_hits_substring']}"
        f" ({sub['step_accuracy_substring']}%)"
    )
    assert (sub["agent_hits_substring"], sub["step_hits_substring"]) == (agents, steps)
    assert sub["agent_accuracy_substring"] == round(100 * agents / files, 2) and sub[
        "step_accuracy_substring"
    ] == round(100 * steps / files, 2)
    assert 0 < steps < len(records) and 0 < agents < len(records)  # the file exercises both outcomes


@pytest.mark.parametrize("layout", range(len(LAYOUTS)))
def test_each_layout_alone(records, layout):
    """Every layout on every record: a field evaluate.py cannot read makes the prediction wrong on both."""
    predictions = [_judged(r.id, LAYOUTS[layout](r.gold.agent, r.gold.step_label), 0) for r in records]
    sub, (agents, steps, _) = _figures(records, predictions)
    assert (sub["agent_hits_substring"], sub["step_hits_substring"]) == (agents, steps)
    if layout in (1, 2, 3, 4, 5, 8, 14, 15):  # -N, no step, no agent, bold, placeholder, "step N", empty, failed call
        assert agents == steps == 0 and sub["parsed"] == 0


def test_minus_one_never_reads_as_one():
    from failforge.attribution._metrics import upstream_read

    assert upstream_read("Agent Name: Coder\nStep Number: -1") is None
    assert upstream_read("Agent Name: Coder\nStep Number: 1") == ("Coder", "1")
    assert upstream_read("Agent Name: Coder\nStep Number: 4\nPrediction for 2.json: Agent Name: X") == ("Coder", "4")
