"""Reading a dataset back: its numbers (card, report), the HTML report and the terminal record view.

Everything here reads a campaign's output folder and nothing else, so a dataset copied to another
machine (with or without its seed files) can still be inspected.
"""

from failforge.report._dataset import Dataset, Record, load_dataset, prefix_hash, read_records
from failforge.report._html import render_report, write_report
from failforge.report._summary import ModeConformance, conformance_by_mode, describe_realism, summarise
from failforge.report._terminal import render_record

__all__ = [
    "Dataset",
    "ModeConformance",
    "Record",
    "conformance_by_mode",
    "describe_realism",
    "load_dataset",
    "prefix_hash",
    "read_records",
    "render_record",
    "render_report",
    "summarise",
    "write_report",
]
