"""The ``failforge`` command: :data:`app` plus one module per command group, imported here."""

from failforge.cli import _commands  # noqa: F401 - registers the commands on app
from failforge.cli import _report  # noqa: F401 - report and show
from failforge.cli._app import app, main

__all__ = ["app", "main"]
