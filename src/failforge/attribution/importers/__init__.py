"""Importers from public failure-attribution datasets (and failforge gold) to labelled-failure records.

Each module registers one importer in :data:`failforge.plugins.importers`: a function taking a path and
yielding records, or a :class:`~failforge.attribution.RecordProblem` for each source record it skips.
"""

from failforge.attribution.importers._common import bare_agent

__all__ = ["bare_agent"]
