"""Label quality: does the decisive step exhibit its mode, and does it look like the agent's own step?

*Mode conformance* gives every candidate a verdict on whether ã_t shows the labelled error mode:
decided by a rule for the structural modes (A.2, A.3, A.4, A.5, A.6, R.3), by a recorded judge call
for the semantic ones when a judge is enabled, and otherwise left unverified. *The realism probe*
measures how easily a cheap detector tells injected steps from natural ones.

This layer sits just above the model boundary: it reads trajectories and may call a judge through
the boundary, and the injection (rule-based guide), the filters and the campaign build on it.
"""

from __future__ import annotations

from failforge.conformance._checks import STRUCTURAL_CHECKS, STRUCTURAL_MODES, check_structural, deterministic_verdict, on_task
from failforge.conformance._judge import JUDGE_SYSTEM, judge_request, judged_verdict, parse_judgement, recorded_call, render_step, replay_judge, replayed_call, run_judge
from failforge.conformance._realism import FEATURES, RealismResult, auc_score, branch_pairs, fold_assignment, realism_examples, realism_of, realism_probe, step_features
from failforge.conformance._verdict import ConformanceVerdict, JudgeRecord
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


__all__ = [
    "FEATURES",
    "JUDGE_SYSTEM",
    "STRUCTURAL_CHECKS",
    "STRUCTURAL_MODES",
    "ConformanceVerdict",
    "JudgeRecord",
    "RealismResult",
    "assess",
    "auc_score",
    "branch_pairs",
    "check_structural",
    "deterministic_verdict",
    "fold_assignment",
    "is_structural",
    "judge_request",
    "judged_verdict",
    "on_task",
    "parse_judgement",
    "realism_examples",
    "realism_of",
    "realism_probe",
    "recorded_call",
    "render_step",
    "replay_judge",
    "replayed_call",
    "run_judge",
    "step_features",
]
