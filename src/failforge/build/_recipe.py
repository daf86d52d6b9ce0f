"""The build recipe: cells (environment x harness or framework x seeds x modes), targets, a budget, prices, a split.

A cell is a campaign: its fields are a campaign file's (``seeds``, ``environment``, ``harness``, ``[plan]``,
``[filters]``, ``agent``, ``guide``, ``executor`` ...), laid over the recipe's ``[defaults]``, and validated as one,
so a typo in a cell is the same one-line error a campaign file gives, naming the cell. Its campaign runs in
``RELEASE/cells/<name>/`` with its own ledger: that is what makes the whole build resumable exactly once.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, field_validator, model_validator

from failforge.campaign import CampaignConfig
from failforge.configfile import read_config_data, validate_config
from failforge.errors import ConfigError
from failforge.taxonomy import get_mode

#: Campaign fields whose relative paths are relative to the recipe file.
_PATH_FIELDS = ("seeds",)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Price(_Section):
    """What an endpoint charges, in dollars per million tokens (the recipe's ``[prices."MODEL"]``)."""

    input_per_mtok: float = Field(default=0.0, ge=0)
    output_per_mtok: float = Field(default=0.0, ge=0)

    def dollars(self, prompt_tokens: float, completion_tokens: float) -> float:
        return (prompt_tokens * self.input_per_mtok + completion_tokens * self.output_per_mtok) / 1e6


class Targets(_Section):
    """How much gold the build wants. Every number is a floor; a cell's quota is the largest share any of them asks
    of it (``total`` and the per-environment / per-framework numbers are shared equally by the cells they cover),
    so the build comes out balanced across cells unless a cell's own ``target`` says otherwise."""

    total: int | None = Field(default=None, ge=1, description="gold in all")
    per_cell: int | None = Field(default=None, ge=1, description="gold from every cell at least")
    per_environment: dict[str, PositiveInt] = Field(
        default_factory=dict, description="gold per benchmark, shared by its cells"
    )
    per_framework: dict[str, PositiveInt] = Field(
        default_factory=dict, description="gold per framework, shared by its cells"
    )
    per_mode: int | dict[str, int] | None = Field(
        default=None,
        description=(
            "gold per taxonomy mode: one number for every mode the cells plan, or a table by code; a mode that has"
            " its share is no longer attempted"
        ),
    )

    @field_validator("per_mode")
    @classmethod
    def _known_modes(cls, value: int | dict[str, int] | None) -> int | dict[str, int] | None:
        # checked here rather than by PositiveInt: a union's error would name pydantic's branch, not the mode
        if isinstance(value, dict):
            for code, n in value.items():
                if n < 1:
                    raise ValueError(
                        f"the target of mode {code} is {n}; give at least 1 (leave a mode out of a cell's"
                        " plan.modes not to attempt it)"
                    )
            try:
                return {get_mode(code).code: n for code, n in value.items()}
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
        if value is not None and value < 1:
            raise ValueError(f"per_mode is {value}; give at least 1 (gold per mode)")
        return value

    def mode_target(self, code: str) -> int | None:
        if isinstance(self.per_mode, dict):
            return self.per_mode.get(code)
        return self.per_mode


class Budget(_Section):
    """Where the build stops whatever the targets say: checked before every attempt starts (attempts in flight
    finish, so a build can pass a budget by at most the attempts running at that moment)."""

    attempts: int | None = Field(default=None, ge=1)
    tokens: int | None = Field(default=None, ge=1, description="prompt and completion tokens of every live call")
    dollars: float | None = Field(default=None, gt=0, description="tokens priced by [prices]")


class SplitConfig(_Section):
    """How the gold is split. By seed, within each benchmark: every record branched from one seed lands in the same
    split, so no split holds a sibling of another's record (they share the prefix up to the decisive step)."""

    dev: float = Field(default=0.0, ge=0, lt=1)
    test: float = Field(default=0.2, ge=0, lt=1)
    rng_seed: int = 0

    @model_validator(mode="after")
    def _fractions(self) -> SplitConfig:
        if self.dev + self.test >= 1:
            raise ValueError(f"dev + test must leave some train: {self.dev} + {self.test} >= 1")
        return self


class Cell(BaseModel):
    """One cell: a name, what it counts towards, and its campaign fields (checked as a campaign file's)."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", description="its folder under cells/")
    framework: str | None = Field(
        default=None, description="the framework its gold counts towards (None: the cell's harness, or 'native')"
    )
    target: int | None = Field(default=None, ge=1, description="gold wanted from this cell")

    def campaign_fields(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class Recipe(_Section):
    """A whole build, as ``failforge build RECIPE.toml`` reads it."""

    defaults: dict[str, Any] = Field(default_factory=dict, description="campaign fields every cell shares")
    cells: list[Cell] = Field(min_length=1)
    targets: Targets = Field(default_factory=Targets)
    budget: Budget = Field(default_factory=Budget)
    prices: dict[str, Price] = Field(default_factory=dict, description="by model name; a model not named is free")
    round_size: int = Field(
        default=50,
        ge=1,
        description="attempts each cell runs before the next cell's turn (balance; a budget is spread over cells)",
    )
    split: SplitConfig = Field(default_factory=SplitConfig)
    codes: Literal["release", "failforge"] = Field(
        default="release", description="the taxonomy codes of the release's rows (failforge's own code stays in each)"
    )

    @field_validator("cells")
    @classmethod
    def _unique_names(cls, value: list[Cell]) -> list[Cell]:
        seen: dict[str, str] = {}
        for cell in value:
            # by folder name as a case-insensitive file system (macOS, Windows) sees it: "A" and "a" are one folder
            other = seen.get(cell.name.casefold())
            if other == cell.name:
                raise ValueError(f"two cells are named {cell.name!r}; each cell needs a folder of its own")
            if other is not None:
                raise ValueError(
                    f"cells {other!r} and {cell.name!r} differ only in case: on a case-insensitive file system they"
                    " share one folder; give each cell a name of its own"
                )
            seen[cell.name.casefold()] = cell.name
        return value

    def price(self, model: str) -> Price:
        return self.prices.get(model, Price())


def cell_config(recipe: Recipe, cell: Cell, release: Path) -> CampaignConfig:
    """The cell's campaign: the recipe's defaults, the cell's own fields over them, its output under the release."""
    # a field [defaults] gets wrong is said as the defaults', not as the first cell's
    if "output" in recipe.defaults:
        raise ConfigError("recipe: [defaults] sets 'output'; each cell writes to RELEASE/cells/<name>/: remove it")
    unknown = sorted(set(recipe.defaults) - set(CampaignConfig.model_fields))
    if unknown:
        raise ConfigError(f"recipe: [defaults]: field '{unknown[0]}' is not a campaign-file field")
    data = _merge(recipe.defaults, cell.campaign_fields())
    if "output" in data:
        raise ConfigError(f"cell {cell.name!r}: a cell writes to RELEASE/cells/{cell.name}/; remove its 'output'")
    data["output"] = str(release / "cells" / cell.name)
    return validate_config(CampaignConfig, data, where=f"recipe: cell {cell.name!r}")


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` laid on ``base``, tables merged key by key (a cell's ``[plan]`` changes only what it names)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def load_recipe(path: str | Path) -> Recipe:
    """Read a recipe; relative seed paths (in ``[defaults]`` or a cell) are relative to the recipe file."""
    file = Path(path)
    data = read_config_data(file, what="recipe", format="toml")
    base = file.resolve().parent
    for table in [data.get("defaults"), *(data.get("cells") or [])]:
        if not isinstance(table, dict):
            continue
        for key in _PATH_FIELDS:
            value = table.get(key)
            if isinstance(value, list):
                table[key] = [str(base / p) if isinstance(p, str) and not Path(p).is_absolute() else p for p in value]
    return validate_config(Recipe, data, where=f"recipe {file}")


def quotas(recipe: Recipe, environments: dict[str, str], frameworks: dict[str, str]) -> dict[str, int | None]:
    """Each cell's quota: the largest share of gold any target asks of it (None: no target covers it, so it runs its
    whole plan). ``environments`` and ``frameworks`` give each cell's benchmark and framework by cell name."""
    names = [cell.name for cell in recipe.cells]
    t = recipe.targets
    out: dict[str, int | None] = {}
    for cell in recipe.cells:
        asks: list[int] = []
        if cell.target:
            asks.append(cell.target)
        if t.per_cell:
            asks.append(t.per_cell)
        if t.total:
            asks.append(math.ceil(t.total / len(names)))
        env = environments.get(cell.name)
        if env in t.per_environment:
            share = sum(1 for n in names if environments.get(n) == env)
            asks.append(math.ceil(t.per_environment[env] / share))
        fw = frameworks.get(cell.name)
        if fw in t.per_framework:
            share = sum(1 for n in names if frameworks.get(n) == fw)
            asks.append(math.ceil(t.per_framework[fw] / share))
        out[cell.name] = max(asks) if asks else None
    return out


__all__ = [
    "Budget",
    "Cell",
    "Price",
    "Recipe",
    "SplitConfig",
    "Targets",
    "cell_config",
    "load_recipe",
    "quotas",
]
