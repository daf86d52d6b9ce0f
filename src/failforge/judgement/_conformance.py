"""Mode conformance: does a candidate's decisive step show its error mode? A rule decides the structural modes
(A.2-A.6, R.3, P.1, P.2, and R.1 at the steps its rules cover); a recorded judge call may decide the semantic ones;
otherwise the verdict is left unverified. The mode-conformance filter asks here."""

from __future__ import annotations

from failforge.judgement._checks import STRUCTURAL_CHECKS, deterministic_verdict
from failforge.judgement._mode_judge import judge_request, judged_verdict, run_judge
from failforge.judgement._verdict import ConformanceVerdict
from failforge.llm import Responder
from failforge.taxonomy import ErrorMode
from failforge.trajectory import Step, Trajectory


def assess(
    seed: Trajectory,
    injected: Step,
    t: int,
    mode: ErrorMode,
    *,
    judge: Responder | None = None,
    judge_model: str = "",
    record_id: str = "",
) -> ConformanceVerdict:
    """The conformance verdict for one candidate: a rule where one decides, else the judge if given."""
    verdict = deterministic_verdict(seed, injected, t, mode.code)
    if verdict.method != "unverified" or judge is None:
        return verdict
    record = run_judge(judge, judge_request(seed, injected, t, mode, model=judge_model), record_id=record_id or seed.id)
    return judged_verdict(record, mode.code)


def is_structural(code: str) -> bool:
    return code in STRUCTURAL_CHECKS


__all__ = ["assess", "is_structural"]
