"""A deterministic loopback judge that follows the trajectory auditor's protocol (``--method auditor``).

It stands in for a strong remote judge that knows each record's gold: the reply is a pure function of the
request (the record is recognised from the prompt's question and step lines) and the fixed table of
records it was built with. It writes one ``Decision:`` line per audited step (state by the step's form, the
step's first words as the quote, confidence 0.3 at the gold step and 0.9 elsewhere), the scores O=1, C=2,
T=3, the error source failforge's table gives the gold mode (``planning`` without one), impact
``cost-recoverable``, and the gold agent and step. The mode depends on what the prompt shows:

- a menu (the 18 modes or the paraphrased menu) that lists the gold code: that code (``PL.1`` without a
  gold mode);
- no menu: the gold mode in words: its taxonomy definition (``describe="definition"``), its paraphrase
  from ``mode_menu_paraphrased.yaml`` (``describe="paraphrase"``: a judge that never saw the taxonomy's
  wording), or only that paraphrase's headline, the words before its first " - " (``describe="headline"``:
  a judge that names the error in a few words, e.g. "Makes things up"), which the free-text map then
  reads back, or not.

Deviations for tests, by record id: ``wrong_step`` (answers the step after the gold), ``bad_agent`` (names
an agent that is not recorded, in every reply), ``bad_impact_once`` (an invalid impact in the first reply
only, so the retry fixes it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from typing import Any, Literal

from failforge.attribution import LabelledFailure, mode_paraphrases, step_body
from failforge.judgement import error_source
from failforge.taxonomy import get_mode

Policy = Callable[[dict[str, Any]], tuple[str | None, None]]


def _marker(record: LabelledFailure, index: int) -> str:
    return f"Step {index} - {record.steps[index].agent}: {step_body(record.steps[index])[:30]}"


def _state(record: LabelledFailure, index: int, last: int) -> str:
    step = record.steps[index]
    if step.tool_calls:
        return "act"
    if index == last:
        return "stop"
    return "ask" if step.content.rstrip().endswith("?") else "act"


def _quote(record: LabelledFailure, index: int) -> str:
    words = [w for w in step_body(record.steps[index]).replace('"', " ").replace("|", " ").split()][:6]
    return " ".join(words)


def auditor_judge(
    records: Sequence[LabelledFailure],
    *,
    describe: Literal["definition", "paraphrase", "headline"] = "definition",
    wrong_step: Collection[str] = (),
    bad_agent: Collection[str] = (),
    bad_impact_once: Collection[str] = (),
) -> Policy:
    def record_of(text: str) -> LabelledFailure:
        scored = [
            (sum(_marker(r, i) in text for i in r.candidate_steps()), r)
            for r in records
            if r.task.question.split("\n")[0][:80] in text
        ]
        if not scored:
            raise AssertionError(f"unknown record in prompt: {text[:200]}")
        return max(scored, key=lambda pair: pair[0])[1]

    def answer(body: dict[str, Any]) -> tuple[str | None, None]:
        messages = body["messages"]
        first = next(m["content"] for m in messages if m["role"] == "user")
        if "Audit the trajectory." not in first:
            raise AssertionError(f"not an auditor prompt: {first[:200]}")
        record = record_of(first)
        retry = len(messages) > 2
        gold = record.gold
        audited = [int(n) for n in re.search(r"For each agent step among ([\d, ]+),", first).group(1).split(",")]  # type: ignore[union-attr]
        lines = [
            f'Decision: {i} | {_state(record, i, audited[-1])} | "{_quote(record, i)}" |'
            f" {0.3 if i == gold.step else 0.9}"
            for i in audited
        ]
        step = gold.step + 1 if record.id in wrong_step else gold.step
        agent = "Nobody" if record.id in bad_agent else gold.agent
        impact = "catastrophic" if record.id in bad_impact_once and not retry else "cost-recoverable"
        code = gold.mode or "PL.1"
        if "one code from the list" in first:
            mode = code if f"- {code}:" in first else "none of these"
        elif describe in ("paraphrase", "headline"):
            mode = mode_paraphrases()[code] if describe == "paraphrase" else mode_paraphrases()[code].split(" - ")[0]
        else:
            mode = get_mode(code).definition
        lines += [
            "Outcome: 1",
            "Control: 2",
            "Trajectory: 3",
            f"Source: {error_source(gold.mode) or 'planning'}",
            f"Impact: {impact}",
            f"Agent: {agent}",
            f"Step: {step}",
            f"Mode: {mode}",
            "Reason: the decisive step.",
        ]
        return "\n".join(lines), None

    return answer
