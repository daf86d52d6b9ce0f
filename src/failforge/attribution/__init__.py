"""Failure attribution: labelled-failure records, importers, attribution methods, metrics."""

from failforge.attribution._auditor import attach_audits
from failforge.attribution._codes import RELEASE_CODES, RELEASE_TAXONOMY, to_release
from failforge.attribution._components import ChainError, ComponentLabel, check_label
from failforge.attribution._dispatch import EXECUTORS
from failforge.attribution._methods import methods
from failforge.attribution._methods_config import load_methods_config
from failforge.attribution._metrics import compare, score
from failforge.attribution._outcome_rates import outcome_report
from failforge.attribution._predictions import load_predictions
from failforge.attribution._prompts import PromptConfig, mode_paraphrases, step_body
from failforge.attribution._record import (
    FailureStep,
    Gold,
    ImportSummary,
    LabelledFailure,
    Origin,
    RecordProblem,
    StepCoordinate,
    TaskInfo,
    ToolCallRecord,
    iter_records,
    load_records,
    summarise,
    write_records,
)
from failforge.attribution._run import AttributeConfig, LikelihoodConfig, run_attribution
from failforge.attribution._subset import FIDELITY_METRICS, check_subset, fidelity, load_manifest, make_manifest

__all__ = [
    "methods",
    "mode_paraphrases",
    "step_body",
    "attach_audits",
    "RELEASE_CODES",
    "RELEASE_TAXONOMY",
    "to_release",
    "ChainError",
    "ComponentLabel",
    "check_label",
    "EXECUTORS",
    "load_methods_config",
    "compare",
    "score",
    "outcome_report",
    "load_predictions",
    "PromptConfig",
    "iter_records",
    "AttributeConfig",
    "LikelihoodConfig",
    "run_attribution",
    "FIDELITY_METRICS",
    "check_subset",
    "fidelity",
    "load_manifest",
    "make_manifest",
    "FailureStep",
    "Gold",
    "ImportSummary",
    "LabelledFailure",
    "Origin",
    "RecordProblem",
    "StepCoordinate",
    "TaskInfo",
    "ToolCallRecord",
    "load_records",
    "summarise",
    "write_records",
]
