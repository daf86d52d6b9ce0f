"""Judgement of finished runs: what a step shows, what a run's outcome means, who decided what.

Everything that reads a trajectory after it ran and says something about it lives here, so that the gold
pipeline's filters, ``failforge decide``, the report and the attribution side read one implementation:

- **mode conformance** (``_conformance``, ``_checks``, ``_perception``, ``_user``, ``_text``, ``_mode_judge``,
  ``_verdict``): does a decisive step show its error mode — rules for the structural modes, a recorded judge
  call for the semantic ones; the realism probe (``_realism``);
- **components** (``_components``): one component per step (``C{index}``) and its type;
- **control decisions** (``_decisions``): Act / Ask / Refuse / Stop / Confirm / Recover per agent step by rule,
  error source and impact of a gold label; the recorded **decision judge** for the steps the rules leave open
  (``_decision_judge``) and ``decide_and_adjudicate`` (``_decide``, what ``failforge decide`` does);
- **adjudication** (``_adjudication``): the five-outcome class of a run from execution evidence.

It sits above the one runner (a judge's conversation is a replay session) and below the filters, which call it.
"""

from failforge.judgement._adjudication import (
    ADJUDICATOR,
    REFUSAL_PATTERNS,
    WRITE_PREFIXES,
    adjudicate,
    adjudicated,
    is_write,
    refusal_evidence,
)
from failforge.judgement._checks import HUMAN_HANDOFF, STRUCTURAL_CHECKS, STRUCTURAL_MODES, check_structural, deterministic_verdict, on_task
from failforge.judgement._code import CODE_BLOCK, COLUMN, INTERPRETER_TOOL, NUMBER, ROUND, answer_names, check_code_step, code_of, is_code_step
from failforge.judgement._components import Component, ComponentType, component_id, component_type, components_of
from failforge.judgement._conformance import assess, is_structural
from failforge.judgement._decide import decide_and_adjudicate
from failforge.judgement._decision_judge import (
    PROVENANCE_KEY,
    STATES,
    Counting,
    decide_record,
    decide_with_judge,
    decision_label,
    decision_request,
    judgeable,
    judged_decision,
    parse_decision,
    recorded_decision,
    recorded_decisions,
    recordings,
    stored_judgements,
    with_judgements,
)
from failforge.judgement._decisions import (
    FALLBACK_STOP_RULE,
    SOURCE_BY_FAMILY,
    SOURCE_BY_MODE,
    Decision,
    DecisionJudgement,
    DecisiveLabel,
    ErrorSource,
    Impact,
    State,
    control_change,
    decide_step,
    decisions,
    decisive,
    error_source,
    impact,
    is_error,
    source_and_impact,
    with_source_and_impact,
    writes_after,
)
from failforge.judgement._mode_judge import (
    JUDGE_SYSTEM,
    judge_request,
    judged_verdict,
    parse_judgement,
    recorded_call,
    render_step,
    replay_judge,
    replayed_call,
    run_judge,
)
from failforge.judgement._perception import clicked_box
from failforge.judgement._realism import (
    FEATURES,
    RealismResult,
    auc_score,
    branch_pairs,
    fold_assignment,
    realism_examples,
    realism_of,
    realism_probe,
    step_features,
)
from failforge.judgement._user import context_text, is_user_step, used_values
from failforge.judgement._verdict import ConformanceVerdict, JudgeRecord
from failforge.judgement.text import action_signature

__all__ = [
    "CODE_BLOCK", "COLUMN", "INTERPRETER_TOOL", "NUMBER", "ROUND", "answer_names", "check_code_step", "code_of", "is_code_step",
    "HUMAN_HANDOFF", "clicked_box", "context_text", "is_user_step", "used_values",
    "ADJUDICATOR", "FALLBACK_STOP_RULE", "FEATURES", "JUDGE_SYSTEM", "PROVENANCE_KEY", "REFUSAL_PATTERNS", "SOURCE_BY_FAMILY",
    "SOURCE_BY_MODE", "STATES", "STRUCTURAL_CHECKS", "STRUCTURAL_MODES", "WRITE_PREFIXES",
    "Component", "ComponentType", "ConformanceVerdict", "Counting", "Decision", "DecisionJudgement", "DecisiveLabel",
    "ErrorSource", "Impact", "JudgeRecord", "RealismResult", "State",
    "action_signature", "adjudicate", "adjudicated", "assess", "auc_score", "branch_pairs", "check_structural", "component_id", "component_type",
    "components_of", "control_change", "decide_and_adjudicate", "decide_record", "decide_step", "decide_with_judge",
    "decision_label", "decision_request", "decisions", "decisive", "deterministic_verdict", "error_source", "fold_assignment",
    "impact", "is_error", "is_structural", "is_write", "judge_request", "judgeable", "judged_decision", "judged_verdict",
    "on_task", "parse_decision", "parse_judgement", "realism_examples", "realism_of", "realism_probe", "recorded_call",
    "recorded_decision", "recorded_decisions", "recordings", "refusal_evidence", "render_step", "replay_judge",
    "replayed_call", "run_judge", "source_and_impact", "step_features", "stored_judgements",
    "with_judgements", "with_source_and_impact", "writes_after",
]
