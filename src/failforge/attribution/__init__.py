"""Failure attribution: labelled-failure records, importers, attribution methods, metrics."""

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
    load_records,
    summarise,
    write_records,
)

__all__ = [
    "FailureStep", "Gold", "ImportSummary", "LabelledFailure", "Origin", "RecordProblem", "StepCoordinate", "TaskInfo",
    "ToolCallRecord", "load_records", "summarise", "write_records",
]
