"""Exporters from labelled failures (and failforge gold) to the public formats attribution research uses."""

from failforge.exporters._common import ExportSummary
from failforge.exporters.tracertraj import export_tracertraj  # noqa: E402  (registered by whowhen_pro's import)
from failforge.exporters.whowhen import export_whowhen, to_whowhen  # noqa: E402
from failforge.exporters.whowhen_pro import RELEASE_CODES, export_whowhen_pro, to_whowhen_pro

__all__ = [
    "RELEASE_CODES",
    "ExportSummary",
    "export_tracertraj",
    "export_whowhen",
    "export_whowhen_pro",
    "to_whowhen",
    "to_whowhen_pro",
]
