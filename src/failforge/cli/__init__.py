"""The ``failforge`` command: :data:`app` plus one module per command group, imported here."""
# ruff: noqa: F401  (imported after the parts they need are checked, or for their side effects)

from failforge.cli import (
    _attribution,
    _build,
    _decide,
    _fidelity,
    _generate,
    _info,
    _proxy,
    _report,
    _scripted,
    _seeds,
)  # noqa: F401 - register the commands on app
from failforge.cli._app import app, main

__all__ = ["app", "main"]
