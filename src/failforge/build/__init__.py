"""Build a dataset, not a campaign: ``failforge build RECIPE.toml -o RELEASE/``.

A recipe names cells (environment x harness or framework x seeds x modes, each a campaign), targets (gold in all,
per cell, benchmark, framework, mode), a budget (attempts, tokens, dollars) and prices. The build runs the cells'
campaigns in rounds through the campaign driver (its ledger, executors and resume), stops each cell at its quota,
projects what the targets will take from a pilot (``--pilot N``), then deduplicates, splits by seed and writes the
release Who&When Pro's harness reads. See docs/BUILD.md.
"""

from failforge.build._projection import CellProjection, Projection, project
from failforge.build._recipe import Budget, Cell, Price, Recipe, SplitConfig, Targets, cell_config, load_recipe, quotas
from failforge.build._release import ReleaseSummary, content_key, split_of
from failforge.build._run import BUILD, PILOT, REPORT, ROUNDS, BuildResult, run_build
from failforge.build._stats import CellStats, Spend, cell_stats

__all__ = [
    "BUILD",
    "PILOT",
    "REPORT",
    "ROUNDS",
    "Budget",
    "BuildResult",
    "Cell",
    "CellProjection",
    "CellStats",
    "Price",
    "Projection",
    "Recipe",
    "ReleaseSummary",
    "Spend",
    "SplitConfig",
    "Targets",
    "cell_config",
    "cell_stats",
    "content_key",
    "load_recipe",
    "project",
    "quotas",
    "run_build",
    "split_of",
]
