"""Typer parameters generated from a plugin's pydantic ``Options`` model.

The ``seeds`` and ``record`` subcommands of an environment are built from the environment plugin's
``Options``, so a new environment gets its CLI (``--suite``, ``--backend``, ``--cache-dir``, ...)
without anyone editing the CLI: one file (the plugin) is all it takes.
"""

from __future__ import annotations

import inspect
import types
from typing import Annotated, Any, Optional, Union, get_args, get_origin

import typer
from pydantic import BaseModel
from typer.core import TyperCommand


def _optional(annotation: Any) -> Any:
    """``X | None`` (and a plain ``X``) as ``Optional[X]``, the form typer understands everywhere."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        annotation = args[0] if len(args) == 1 else str
    return Optional[annotation]


def option_parameters(model: type[BaseModel]) -> list[inspect.Parameter]:
    """One keyword-only typer option per field; every default is None so only given flags override the model's."""
    params = []
    for name, field in model.model_fields.items():
        annotation = bool if field.annotation is bool else _optional(field.annotation)
        flag = "--" + name.replace("_", "-")
        decls = [f"{flag}/--no-{name.replace('_', '-')}"] if annotation is bool else [flag]
        params.append(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=None,
                annotation=Annotated[
                    Optional[bool] if annotation is bool else annotation,
                    typer.Option(*decls, help=field.description or ""),
                ],
            )
        )
    return params


def given_options(model: type[BaseModel], values: dict[str, Any]) -> dict[str, Any]:
    """The option values the user actually gave (None means "use the model's default")."""
    return {k: v for k, v in values.items() if k in model.model_fields and v is not None}


def with_signature(func: Any, params: list[inspect.Parameter]) -> Any:
    """Give ``func(**kwargs)`` an explicit signature so typer builds its options from ``params``."""
    func.__signature__ = inspect.Signature(sorted(params, key=lambda p: p.kind))
    return func


def spread_values(args: list[str], flags: tuple[str, ...]) -> list[str]:
    """``--task a b c`` as ``--task a --task b --task c`` (click takes one value per flag).

    Only bare words right after a flag's value are taken (up to the next option, or ``--``), and only in
    commands without positional arguments, where such a word could mean nothing else.
    """
    spread: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        spread.append(arg)
        i += 1
        if arg == "--":
            spread.extend(args[i:])
            break
        name = arg.split("=", 1)[0]
        if name not in flags:
            continue
        if "=" not in arg and i < len(args):  # the flag's own value
            spread.append(args[i])
            i += 1
        while i < len(args) and not args[i].startswith("-"):
            spread.extend((name, args[i]))
            i += 1
    return spread


class SpreadTasks(TyperCommand):
    """A command whose ``--task`` takes several values after one flag: ``--task a b`` or ``--task a --task b``."""

    spread_flags: tuple[str, ...] = ("--task",)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # ctx: the click Context typer vendors (typer._click)
        return super().parse_args(ctx, spread_values(args, self.spread_flags))
