"""The build driver: cells' campaigns in rounds until the targets are met, the budget is spent or the plans run out.

Each round gives every unfinished cell ``round_size`` attempts (its campaign run with a ``stop`` and a ``select``,
so what a round leaves stays planned in the cell's ledger). A cell is finished when it has its quota or has run its
whole plan. When every cell is finished and the recipe's total is still short, the cells with attempts left go on
past their quotas. Mode targets deselect a mode once the build has its share of it, and take a cell at its quota
on for the modes still short that it plans (both checked at each round's start).
The budget is checked before every attempt starts, against what every result so far reports it cost.

Nothing lives only in memory: each cell's folder (ledger, records, arms) is the truth, ``build/rounds.jsonl`` the
wall time of each round. A SIGKILLed build rerun with the same recipe resumes each cell where its ledger stands.
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from failforge.build._projection import Projection, project
from failforge.build._recipe import Price, Recipe, cell_config, quotas
from failforge.build._release import ReleaseSummary, collect_gold, write_release
from failforge.build._stats import CellStats, cell_stats, number
from failforge.campaign import LEDGER, CampaignConfig, CampaignSummary, load_seeds, open_models, run_campaign, versions
from failforge.canonical import canonical_hash
from failforge.configfile import check_regular_file
from failforge.errors import ConfigError, SeedFormatError
from failforge.gold import ArmResult, AttemptResult, ResolvedModels
from failforge.jobs import LOCK_FILE, FolderLock, Ledger, start_ray
from failforge.jsonl import read_json, read_jsonl
from failforge.taxonomy import MODES
from failforge.trajectory import Trajectory

BUILD = "build"
ROUNDS = "rounds.jsonl"
PILOT = "pilot.json"
REPORT = "report.json"
RECIPE = "recipe.json"

Event = Callable[[str], None]
#: Why the rounds stopped when no cell has anything left to do towards its quota ("targets met" once the release
#: is checked and holds every target).
_QUOTAS = "every cell has its quota or has run its plan"


@dataclass
class BuildResult:
    release: Path
    stats: dict[str, CellStats]
    projection: Projection
    rounds: int = 0
    ended: str = ""
    """Why the build stopped: targets met, plans exhausted, budget, circuit breaker, pilot."""
    breaker: str | None = None
    release_summary: ReleaseSummary | None = None
    compared: dict[str, Any] = field(default_factory=dict)
    short_of: list[str] = field(default_factory=list)
    """Every target the build has not met, in words (empty: all met)."""

    def short(self) -> list[str]:
        return self.short_of


@dataclass
class _Cell:
    name: str
    config: CampaignConfig
    environment: str
    framework: str
    quota: int | None
    prices: dict[str, Price]
    done: bool = False
    error: str | None = None


def _check_seed_files(config: CampaignConfig, name: str) -> None:
    """Every seeds file of the cell is a regular file: a missing one is bad input before anything runs (not a cell
    that "did not run" in a release written without it), and a FIFO must not hang the build."""
    for path in config.seeds:
        check_regular_file(path, what=f"cell {name!r}: seeds file {path}", give="a JSONL file of seeds")


def _describe(
    config: CampaignConfig, name: str, framework: str | None, read: dict[tuple[str, ...], list[Trajectory]]
) -> tuple[str, str]:
    """The cell's benchmark and framework: as configured, else its first seed's (``read``: seeds files already read,
    by their paths, so a recipe of many cells over one seeds file reads it once)."""
    _check_seed_files(config, name)
    env, harness = config.environment, config.harness
    if env is None or (framework is None and harness is None):
        key = tuple(config.seeds)
        if key not in read:
            read[key] = load_seeds(config.seeds)[0]
        seeds = read[key]
        if not seeds:
            raise ConfigError(f"cell {name!r}: no readable seed in {', '.join(config.seeds)}")
        env = env or seeds[0].environment.name
        harness = harness or seeds[0].harness.name
    return env, framework or harness or "native"


def _wall(release: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    path = release / BUILD / ROUNDS
    if path.exists():
        for item in read_jsonl(path):
            row = item[1] if isinstance(item, tuple) else {}
            cell = row.get("cell")
            if isinstance(cell, str):  # a torn or foreign line adds nothing
                out[cell] = out.get(cell, 0.0) + number(row.get("seconds"))
    return out


def _append_round(release: Path, row: dict[str, Any]) -> None:
    path = release / BUILD / ROUNDS
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(row, sort_keys=True) + "\n")


class _Spent:
    """The build's running totals, from the cells' folders at the start plus every result since."""

    def __init__(self, cells: list[_Cell], stats: dict[str, CellStats]) -> None:
        self.attempts = sum(s.attempts for s in stats.values())
        self.tokens = sum(sp.tokens for s in stats.values() for sp in s.spend.values())
        self.dollars = sum(
            c.prices.get(role, Price()).dollars(sp.prompt_tokens, sp.completion_tokens)
            for c in cells
            for role, sp in stats[c.name].spend.items()
        )
        self.kept_by_mode: dict[str, int] = {}
        for s in stats.values():
            for mode, row in s.by_mode.items():
                self.kept_by_mode[mode] = self.kept_by_mode.get(mode, 0) + row["kept"]
        self.kept = sum(s.kept for s in stats.values())

    def add(self, cell: _Cell, result: AttemptResult | ArmResult) -> None:
        if isinstance(result, ArmResult):
            cost = result.record.cost
        else:
            self.attempts += 1
            cost = result.record.provenance.get("cost")
            if result.status == "gold":
                self.kept += 1
                label = getattr(result.record, "label", None)
                if label is not None:
                    self.kept_by_mode[label.mode_code] = self.kept_by_mode.get(label.mode_code, 0) + 1
        for role, row in ((cost or {}).get("models") or {}).items():
            prompt, completion = int(row.get("prompt_tokens") or 0), int(row.get("completion_tokens") or 0)
            self.tokens += prompt + completion
            self.dollars += cell.prices.get(role, Price()).dollars(prompt, completion)


def _over_budget(recipe: Recipe, spent: _Spent, in_flight: int) -> str | None:
    b = recipe.budget
    if b.attempts is not None and spent.attempts + in_flight >= b.attempts:
        return f"budget: {b.attempts} attempts"
    if b.tokens is not None and spent.tokens >= b.tokens:
        return f"budget: {b.tokens} tokens"
    if b.dollars is not None and spent.dollars >= b.dollars:
        return f"budget: ${b.dollars}"
    return None


@contextmanager
def _models(cells: list[_Cell]) -> Iterator[dict[str, ResolvedModels]]:
    """Each distinct (agent, guide) pair opened once for the whole build (the embedded model starts once)."""
    with ExitStack() as stack:
        opened: dict[str, ResolvedModels] = {}
        by_cell: dict[str, ResolvedModels] = {}
        for cell in cells:
            key = canonical_hash(
                [
                    cell.config.agent.model_dump(mode="json") if cell.config.agent else None,
                    cell.config.guide.model_dump(mode="json") if cell.config.guide else None,
                ]
            )
            if key not in opened:
                opened[key] = stack.enter_context(open_models(cell.config.agent, cell.config.guide))
            by_cell[cell.name] = opened[key]
        ray_cells = [c for c in cells if c.config.executor == "ray"]
        if ray_cells:  # one Ray instance for every round of every Ray cell, not one per round
            ray, started = start_ray(ray_cells[0].config.ray_address, max(c.config.concurrency for c in ray_cells))
            if started:
                stack.callback(ray.shutdown)
        yield by_cell


def _cells(recipe: Recipe, release: Path) -> list[_Cell]:
    configs = {cell.name: cell_config(recipe, cell, release) for cell in recipe.cells}
    read: dict[tuple[str, ...], list[Trajectory]] = {}
    described = {cell.name: _describe(configs[cell.name], cell.name, cell.framework, read) for cell in recipe.cells}
    envs = {name: d[0] for name, d in described.items()}
    frameworks = {name: d[1] for name, d in described.items()}
    for kind, wanted, have in (
        ("per_environment", recipe.targets.per_environment, set(envs.values())),
        ("per_framework", recipe.targets.per_framework, set(frameworks.values())),
    ):
        missing = sorted(set(wanted) - have)
        if missing:
            raise ConfigError(
                f"recipe: targets.{kind} names {', '.join(missing)}, which no cell runs (cells run:"
                f" {', '.join(sorted(have))})"
            )
    per_mode = recipe.targets.per_mode
    if isinstance(per_mode, dict) and all(configs[c.name].plan.modes for c in recipe.cells):
        # every cell lists its modes, so a mode target no cell plans can never be met: a typo, said now
        planned = {mode for c in recipe.cells for mode in configs[c.name].plan.modes or []}
        missing = sorted(set(per_mode) - planned)
        if missing:
            raise ConfigError(
                f"recipe: targets.per_mode names {', '.join(missing)}, which no cell plans (cells plan:"
                f" {', '.join(sorted(planned))})"
            )
    quota = quotas(recipe, envs, frameworks)
    out = []
    for cell in recipe.cells:
        config = configs[cell.name]
        agent_model = config.agent.model if config.agent else "embedded"
        guide_model = config.guide.model if config.guide else agent_model
        out.append(
            _Cell(
                name=cell.name,
                config=config,
                environment=envs[cell.name],
                framework=frameworks[cell.name],
                quota=quota[cell.name],
                prices={"agent": recipe.price(agent_model), "guide": recipe.price(guide_model)},
            )
        )
    return out


def _stats(cells: list[_Cell], release: Path) -> dict[str, CellStats]:
    return {c.name: cell_stats(c.name, Path(c.config.output)) for c in cells}


def projection_of(recipe: Recipe, cells: list[_Cell], release: Path) -> tuple[dict[str, CellStats], Projection]:
    stats = _stats(cells, release)
    return stats, project(
        recipe, stats, {c.name: c.quota for c in cells}, {c.name: c.prices for c in cells}, _wall(release)
    )


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True, default=str), encoding="utf-8")
    tmp.replace(path)


def run_build(
    recipe: Recipe,
    release: Path,
    *,
    pilot: int | None = None,
    on_event: Event | None = None,
    force: bool = False,
) -> BuildResult:
    """Run (or resume) the build into ``release``; with ``pilot``, only until every cell has settled that many
    attempts, then project (``build/pilot.json``) and write no release."""
    say = on_event or (lambda _line: None)
    if release.exists() and not release.is_dir():
        raise ConfigError(f"-o {release} is a file; give a folder for the release")
    cells = _cells(recipe, release)
    _check_release_folder(release)
    (release / BUILD).mkdir(parents=True, exist_ok=True)
    with FolderLock(release / BUILD):  # one build per release: a second would write the release under this one
        _check_campaigns(cells, force)
        for line in _strays(recipe, release):
            say(line)
        return _build(recipe, release, cells, pilot, say, force)


#: The files a build reads or writes in a release (besides data/*.jsonl, which it replaces).
_RELEASE_FILES = (
    "README.md",
    "manifest.json",
    "taxonomy.yaml",
    "splits.json",
    "failforge/gold.jsonl",
    f"{BUILD}/manifest.json",
    f"{BUILD}/{RECIPE}",
    f"{BUILD}/{ROUNDS}",
    f"{BUILD}/{PILOT}",
    f"{BUILD}/{REPORT}",
)


def _check_release_folder(release: Path) -> None:
    """``-o`` is a release a build made, or a new or empty folder: a build writes README.md, manifest.json and
    data/ into it, which must never overwrite files of the user's. In a release, each file the build writes is a
    regular file: writing a FIFO would block the build for ever, and a folder would fail it after its rounds ran."""
    if not release.is_dir():
        return
    for name in _RELEASE_FILES:
        path = release / name
        if (path.exists() or path.is_symlink()) and not path.is_file():
            raise ConfigError(
                f"{path} is not a regular file (a pipe, a device, a folder or a broken link); move it away: the"
                " build writes it"
            )
    if (release / BUILD / RECIPE).exists() or (release / BUILD / LOCK_FILE).exists():
        return
    if any(release.iterdir()):
        raise ConfigError(
            f"-o {release} holds files and is not a failforge release (no {BUILD}/{RECIPE}); give a new or empty"
            " folder (the release writes README.md, manifest.json and data/ into it)"
        )


def _check_campaigns(cells: list[_Cell], force: bool) -> None:
    """A cell whose folder holds another campaign is refused before anything runs, whether or not the build would
    give it a round: the release's recipe must be the campaign that made its records (``--force`` overrides)."""
    if force:
        return
    for cell in cells:
        path = Path(cell.config.output) / LEDGER
        if not path.exists():
            continue
        ledger = Ledger(path)
        try:
            bound = ledger.bound_hash()
        finally:
            ledger.close()
        if bound and bound != cell.config.config_hash():
            raise ConfigError(
                f"cell {cell.name!r}: {cell.config.output} holds a different campaign (config hash {bound}; the"
                f" recipe's is now {cell.config.config_hash()}): the recipe changed the cell's campaign since it ran."
                " Restore it, give the changed cell a new name (a new folder), or pass --force"
            )


def _strays(recipe: Recipe, release: Path) -> list[str]:
    """Cell folders the recipe no longer names: their records are not in the release, said, never deleted."""
    folder = release / "cells"
    if not folder.is_dir():
        return []
    named = {cell.name for cell in recipe.cells}
    return [
        f"cells/{path.name} is not a cell of this recipe: its records are left out of the release (kept in its"
        " folder; name the cell again to include them)"
        for path in sorted(folder.iterdir())
        if path.is_dir() and path.name not in named
    ]


def _build(
    recipe: Recipe, release: Path, cells: list[_Cell], pilot: int | None, say: Event, force: bool
) -> BuildResult:
    recipe_hash = canonical_hash(recipe.model_dump(mode="json"))[:16]
    recorded = release / BUILD / RECIPE
    # Targets, budget and round size may change between runs (a pilot, then the real targets): what must not change
    # is a cell's campaign, and each cell's ledger refuses that itself. Every recipe the folder was built with is kept.
    history: list[str] = []
    if recorded.exists():
        try:
            kept = read_json(recorded)
        except (SeedFormatError, ConfigError):
            kept = {}  # a torn or foreign file: the history starts again, the cells' ledgers still guard the records
        history = list(kept.get("history") or []) if isinstance(kept, dict) else []
    if recipe_hash not in history:
        history.append(recipe_hash)
    _write_json(
        recorded,
        {
            "recipe_hash": recipe_hash,
            "history": history,
            "recipe": recipe.model_dump(mode="json"),
            "cells": {
                c.name: {
                    "environment": c.environment,
                    "framework": c.framework,
                    "quota": c.quota,
                    "config_hash": c.config.config_hash(),
                }
                for c in cells
            },
            "versions": versions(),
        },
    )
    stats, _ = projection_of(recipe, cells, release)
    spent = _Spent(cells, stats)
    ended = ""
    breaker: str | None = None
    rounds = 0
    spill = False
    with _models(cells) as models:
        while not ended:
            met = {
                m.code
                for m in MODES
                if recipe.targets.mode_target(m.code) is not None
                and spent.kept_by_mode.get(m.code, 0) >= (recipe.targets.mode_target(m.code) or 0)
            }
            kept = {c.name: stats[c.name].kept for c in cells}
            settled = {c.name: stats[c.name].attempts for c in cells}
            short = {m.code for m in MODES if recipe.targets.mode_target(m.code) is not None} - met
            if pilot is not None:
                active = [
                    c
                    for c in cells
                    if settled[c.name] < pilot and not c.done and (c.quota is None or kept[c.name] < c.quota)
                ]
            else:
                active = [
                    c
                    for c in cells
                    if not c.done
                    and (spill or c.quota is None or kept[c.name] < c.quota or _for_modes(c, kept, short, spill))
                ]
            if not active:
                total = recipe.targets.total
                if pilot is None and not spill and total and spent.kept < total and any(not c.done for c in cells):
                    spill = True  # every quota met or plan run out, the total is short: the cells with plans go on
                    say(
                        f"every cell has its quota or has run its plan; the total is short ({spent.kept} of {total}):"
                        " the cells with attempts left go on"
                    )
                    continue
                ended = "pilot done" if pilot is not None else _why_done(cells, recipe, spent)
                break
            rounds += 1
            for cell in active:
                over = _over_budget(recipe, spent, 0)
                if over:
                    ended = over
                    break
                limit = (pilot - settled[cell.name]) if pilot is not None else recipe.round_size
                try:
                    only = _for_modes(cell, kept, short, spill) if pilot is None else None
                    summary = _run_round(
                        cell, models[cell.name], recipe, spent, met, only, limit, kept[cell.name], spill, force
                    )
                except ConfigError as exc:  # this cell cannot run (no usable seed, a changed campaign): the rest go on
                    cell.done, cell.error = True, str(exc)
                    say(f"cell {cell.name} cannot run: {exc}")
                    continue
                _append_round(
                    release,
                    {
                        "cell": cell.name,
                        "round": rounds,
                        "at": _dt.datetime.now(_dt.UTC).isoformat(),
                        "seconds": round(summary.wall, 3),
                        "attempts": summary.attempts,
                        "kept": summary.kept,
                        "pilot": pilot is not None,
                    },
                )
                stats[cell.name] = cell_stats(cell.name, Path(cell.config.output))
                say(
                    f"round {rounds} · {cell.name}: +{summary.attempts} attempts, +{summary.kept} kept"
                    f" ({stats[cell.name].kept}{f'/{cell.quota}' if cell.quota else ''} kept,"
                    f" {stats[cell.name].pending} planned left) · build: {spent.attempts} attempts, {spent.kept} kept,"
                    f" {spent.tokens:,} tokens, ${spent.dollars:.2f}"
                )
                if summary.breaker:
                    breaker, ended = summary.breaker, "circuit breaker"
                    break
                if not summary.stopped and not summary.in_flight:
                    cell.done = True  # it ran every attempt it was given: its plan (or the modes still wanted) is run
                elif not summary.attempts and not summary.in_flight:
                    # stopped before starting anything (a pilot's cell at its quota): nothing changed, so the next
                    # round would stop the same way; without this the build would loop on empty rounds forever
                    cell.done = True
    stats, projection = projection_of(recipe, cells, release)
    result = BuildResult(
        release=release,
        stats=stats,
        projection=projection,
        rounds=rounds,
        ended=ended,
        short_of=_short(recipe, cells, stats, projection),
    )
    result.breaker = breaker
    if pilot is not None:
        _write_json(
            release / BUILD / PILOT,
            {
                "pilot": pilot,
                "recipe_hash": recipe_hash,
                "at": _dt.datetime.now(_dt.UTC).isoformat(),
                **projection.model_dump(by_alias=True),
            },
        )
        return result
    if breaker:
        return result
    made = ReleaseSummary()
    gold = collect_gold([(c.name, Path(c.config.output)) for c in cells], made)
    result.short_of += _short_after_dedup(recipe, cells, gold, result.short_of)
    if not result.short_of and ended == _QUOTAS:  # the release holds every target too: say so
        ended = result.ended = "targets met"
    result.compared = _compare(release, projection, recipe_hash)
    _write_json(
        release / BUILD / REPORT,
        {
            "ended": ended,
            "rounds": rounds,
            "cells": {name: s.model_dump() for name, s in stats.items()},
            "projection_now": projection.model_dump(by_alias=True),
            "pilot_vs_actual": result.compared,
        },
    )
    result.release_summary = write_release(
        release,
        gold,
        recipe.split,
        recipe.codes,
        made,
        [release / BUILD / name for name in (RECIPE, ROUNDS, PILOT, REPORT)],
    )
    return result


def _for_modes(cell: _Cell, kept: dict[str, int], short: set[str], spill: bool) -> set[str] | None:
    """The modes short of their target that a cell past its quota goes on for, attempting only those (None: the
    cell runs for its quota, or has nothing a mode target still wants)."""
    if spill or cell.quota is None or kept[cell.name] < cell.quota:
        return None
    wanted = short if cell.config.plan.modes is None else short & set(cell.config.plan.modes)
    return wanted or None


@dataclass
class _RoundSummary:
    attempts: int
    kept: int
    wall: float
    stopped: bool
    in_flight: int
    breaker: str | None


def _run_round(
    cell: _Cell,
    resolved: ResolvedModels,
    recipe: Recipe,
    spent: _Spent,
    met_modes: set[str],
    only_modes: set[str] | None,
    limit: int,
    kept_before: int,
    spill: bool,
    force: bool,
) -> _RoundSummary:
    def stop(summary: CampaignSummary) -> bool:
        if summary.attempts + summary.in_flight >= limit:
            return True
        if not spill and only_modes is None and cell.quota is not None and kept_before + summary.kept >= cell.quota:
            return True
        return _over_budget(recipe, spent, summary.in_flight) is not None

    def settled(result: AttemptResult | ArmResult) -> None:
        spent.add(cell, result)

    taken = capped = 0

    def select(spec: Any) -> bool:
        # at most ``limit`` attempts are handed to the round: the campaign runs the original arm of every point its
        # selected attempts need before the first attempt starts, so a round of 2 (a pilot of 2) handed the whole
        # plan ran an arm for every point of it
        nonlocal taken, capped
        mode = getattr(spec, "mode", None)
        if mode in met_modes or (only_modes is not None and mode not in only_modes):
            return False
        if taken >= limit:
            capped += 1
            return False
        taken += 1
        return True

    started = time.monotonic()
    summary = run_campaign(cell.config, resolved, force=force, select=select, stop=stop, on_settled=settled)
    return _RoundSummary(
        attempts=summary.attempts,
        kept=summary.kept,
        wall=time.monotonic() - started,
        stopped=summary.stopped or summary.breaker is not None or capped > 0,  # capped: more stays planned
        in_flight=summary.in_flight,
        breaker=summary.breaker,
    )


@dataclass
class _Counts:
    """Gold counted the ways targets name it: by cell, benchmark, framework and mode, and in all."""

    cell: Counter[str] = field(default_factory=Counter)
    benchmark: Counter[str] = field(default_factory=Counter)
    framework: Counter[str] = field(default_factory=Counter)
    mode: Counter[str] = field(default_factory=Counter)
    total: int = 0


def _shortfalls(
    recipe: Recipe, counts: _Counts, mode_targets: dict[str, int], unit: str, skip: frozenset[str] = frozenset()
) -> list[str]:
    """Every target the recipe states that ``counts`` does not meet, in recipe order (a cell's share of the total is
    not a target of its own: when other cells made up for it, the total is met); ``skip`` names targets already
    said ("cell bfcl", "mode A.2", "total")."""
    t = recipe.targets
    wanted = [("cell", c.name, max(c.target or 0, t.per_cell or 0), counts.cell[c.name]) for c in recipe.cells]
    wanted += [("benchmark", n, w, counts.benchmark[n]) for n, w in t.per_environment.items()]
    wanted += [("framework", n, w, counts.framework[n]) for n, w in t.per_framework.items()]
    wanted += [("mode", m, w, counts.mode[m]) for m, w in mode_targets.items()]
    wanted.append(("total", "", t.total or 0, counts.total))
    out = []
    for what, name, want, have in wanted:
        where = f"{what} {name}".strip()
        if want and have < want and where not in skip:
            out.append(f"{where}: {have} of {want} {unit}")
    return out


def _short(recipe: Recipe, cells: list[_Cell], stats: dict[str, CellStats], projection: Projection) -> list[str]:
    """The targets the cells' kept records (their ledgers' counts) do not meet, after the cells that could not run."""
    counts = _Counts(total=sum(s.kept for s in stats.values()))
    for c in cells:
        kept = stats[c.name].kept
        counts.cell[c.name] += kept
        counts.benchmark[c.environment] += kept
        counts.framework[c.framework] += kept
    counts.mode.update({m: r["kept"] for m, r in projection.modes.items()})
    broken = [f"cell {c.name} did not run: {c.error}" for c in cells if c.error]
    return broken + _shortfalls(recipe, counts, {m: r["target"] for m, r in projection.modes.items()}, "kept")


def _short_after_dedup(
    recipe: Recipe, cells: list[_Cell], gold: list[tuple[str, Trajectory]], already: list[str]
) -> list[str]:
    """The targets the release misses once duplicates are dropped, where the kept counts met them: the build counts
    kept records as it goes (a ledger count per cell), but two attempts that made the same record make it once in
    the release (deterministic policies do this often, a sampled model rarely). Said, so a build never claims a
    target its release does not hold."""
    by_name = {c.name: c for c in cells}
    counts = _Counts(total=len(gold))
    for made_by, record in gold:
        counts.cell[made_by] += 1
        counts.benchmark[by_name[made_by].environment] += 1
        counts.framework[by_name[made_by].framework] += 1
        if record.label is not None:
            counts.mode[record.label.mode_code] += 1
    planned = {mode for c in cells for mode in (c.config.plan.modes or [])}
    targets = {m: w for m in sorted(planned | set(counts.mode)) if (w := recipe.targets.mode_target(m) or 0)}
    unit = "distinct records in the release (duplicates dropped)"
    return _shortfalls(recipe, counts, targets, unit, skip=frozenset(line.split(":")[0] for line in already))


def _why_done(cells: list[_Cell], recipe: Recipe, spent: _Spent) -> str:
    """Why the rounds stopped. Whether the targets are met is said apart (``BuildResult.short_of``): the rounds go
    by the cells' quotas, so a mode target or a cell that could not run may still be short when they stop."""
    broken = [c.name for c in cells if c.error]
    cannot = f" (could not run: {', '.join(broken)})" if broken else ""
    if all(c.done for c in cells):
        return (
            f"every cell{' that could run' if broken else ''} ran its whole plan"
            + (
                f" (the total is short: {spent.kept} of {recipe.targets.total})"
                if recipe.targets.total and spent.kept < recipe.targets.total
                else ""
            )
            + cannot
        )
    return f"every other {_QUOTAS.removeprefix('every ')}{cannot}" if broken else _QUOTAS


def _compare(release: Path, now: Projection, recipe_hash: str) -> dict[str, Any]:
    """The pilot's projection to the targets against what the build took (nothing without a pilot). A pilot run
    under other targets projected to those: the comparison says so (``pilot_recipe``)."""
    path = release / BUILD / PILOT
    if not path.exists():
        return {}
    try:
        pilot = read_json(path)
    except SeedFormatError as exc:
        return {"pilot_recipe": f"the pilot's projection could not be read: {exc}"}
    if not isinstance(pilot, dict):
        return {"pilot_recipe": f"{path} is not a pilot projection"}
    projected = pilot.get("to_targets") or {}
    out: dict[str, Any] = {}
    if pilot.get("recipe_hash") != recipe_hash:
        out["pilot_recipe"] = f"the pilot ran recipe {pilot.get('recipe_hash')}, the build {recipe_hash}"
    for key in ("attempts", "kept", "tokens", "dollars", "seconds"):
        actual = now.so_far.get(key)
        guess = projected.get(key)
        out[key] = {
            "projected": guess,
            "actual": actual,
            "ratio": (actual / guess) if guess and actual is not None else None,
        }
    return out


__all__ = ["BuildResult", "projection_of", "run_build"]
