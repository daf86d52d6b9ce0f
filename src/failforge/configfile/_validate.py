"""A config's parsed content checked against the command's pydantic model, with the first problem as one
:class:`~failforge.errors.ConfigError` line naming where it is (the file, the cell) and the field, so every config
reader (campaign files, build recipes and their cells) says a wrong field the same way."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from failforge.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


def validate_config(model: type[M], data: Any, *, where: str) -> M:
    """``data`` as a ``model``; ``where`` starts the message ("campaign file c.toml", "recipe: cell 'bfcl'")."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        why = first["msg"].removeprefix("Value error, ")
        raise ConfigError(f"{where}: field '{field}': {why}") from exc
