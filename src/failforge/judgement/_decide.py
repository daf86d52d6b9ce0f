"""One record judged and adjudicated again: what ``failforge decide`` and a campaign's ``decision_judge`` do to each
record.

Its own module because it needs both :mod:`failforge.judgement._decision_judge` (the recorded judge) and
:mod:`failforge.judgement._adjudication` (which reads the judge's recorded answers, so it imports the judge module and
not the other way round). Adjudication stays a pure function of the record; this is where the judge is called.
"""

from __future__ import annotations

from typing import Any

from failforge.judgement._adjudication import adjudicate
from failforge.judgement._decision_judge import decide_record
from failforge.judgement._decisions import Decision
from failforge.llm import Responder
from failforge.trajectory import Trajectory


def decide_and_adjudicate(
    trajectory: Trajectory, judge: Responder | None, *, model: str
) -> tuple[Trajectory, list[Decision]]:
    """``trajectory`` with its judgements attached (:func:`failforge.judgement._decision_judge.decide_record`: recorded
    ones replayed, ``PromptDrift`` when a judged step changed, the rest asked of ``judge``), adjudicated again from
    the record when it had an adjudication and a step was judged (a run that did not finish keeps its
    ``failure``), so a judged refusal counts; a record with no judgement keeps its adjudication as written."""
    record, decided = decide_record(trajectory, judge, model=model)
    if record.adjudication is not None and any(
        d.judge is not None for d in decided
    ):  # nothing judged: the outcome stands as written
        failure: Any = record.adjudication.evidence.get("failure")
        record = record.model_copy(
            update={"adjudication": adjudicate(record, failure=failure if isinstance(failure, dict) else None)}
        )
    return record, decided


__all__ = ["decide_and_adjudicate"]
