"""The ``failforge`` command's application object and what every command shares.

Commands live in sibling modules (one group each) and register on :data:`app`; ``failforge.cli``
imports them. Every command takes its configuration from flags (no hidden state) and records it in
what it writes. Model endpoints: ``--base-url``/``--model`` (key read from ``--api-key-env``) for any
OpenAI-compatible server; without them failforge starts the embedded local model for the duration of
the command and stops it afterwards.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console, ConsoleDimensions
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.text import Text

from failforge.errors import FailforgeError
from failforge.secrets import redact_known

# A traceback's locals would show a key held in a variable: tracebacks name the frames, not their values.
app = typer.Typer(
    help="Manufacture gold failure trajectories for LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)
seeds_app = typer.Typer(help="Make seed trajectories.", no_args_is_help=True)
app.add_typer(seeds_app, name="seeds")

#: Width of a console that writes to a pipe or a file: wide enough that no table is cut ("gro…") and no
#: message is folded; a table takes its own natural width, not this one.
PIPE_WIDTH = 10_000


class UserConsole(Console):
    """The console every command prints through (``console``: stderr, ``out``: stdout): the one place all
    user-facing text passes, so it is where secrets are masked (:func:`failforge.secrets.redact_known`:
    the keys this process used and every key-shaped string), whoever built the message.

    On a terminal it is rich's. Writing to a pipe or a log (not a terminal, no ``COLUMNS`` given), rich
    would lay everything out for 80 columns: tables cut with an ellipsis, a one-line error folded into
    three. Here a message stays one line and a table takes its natural width.
    """

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        if self._width is None and not self.is_terminal:  # _width: an explicit width or COLUMNS
            return ConsoleDimensions(PIPE_WIDTH, size.height)
        return size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size

    def render_str(self, text: str, **kwargs: Any) -> Text:
        # Every string shown goes through here (a message, a table cell) before markup, highlighting and
        # wrapping, so a key is masked while it is still whole: neither a colour code nor a line break
        # can split it past the redactor.
        return super().render_str(redact_known(text), **kwargs)

    def print(self, *objects: Any, soft_wrap: bool | None = None, **kwargs: Any) -> None:
        if soft_wrap is None and not self.is_terminal:
            soft_wrap = True  # a message is one line in a log, whatever its length
        super().print(*objects, soft_wrap=soft_wrap, **kwargs)


console = UserConsole(stderr=True)
out = UserConsole()


def _endpoint(base_url: str | None, model: str | None, api_key_env: str | None):  # type: ignore[no-untyped-def]
    from pydantic import ValidationError

    from failforge.errors import ConfigError
    from failforge.llm import ModelEndpoint

    if base_url is None:
        return None
    if not model:
        raise ConfigError("--model is required with --base-url (the model name the endpoint serves)")
    try:
        return ModelEndpoint(base_url=base_url, model=model, api_key_env=api_key_env)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(
            f"--{str(first['loc'][0]).replace('_', '-')}: {first['msg'].removeprefix('Value error, ')}"
        ) from exc


def file_in_the_way(path: Path) -> Path | None:
    """The first existing part of ``path`` (itself included) that is a regular file where a folder must be:
    ``some_file/x`` cannot be made, and ``mkdir`` would say only "Not a directory"."""
    parts = [*reversed(path.parents), path]
    for part in parts[:-1]:
        if part.exists() and not part.is_dir():
            return part
    return None


#: Errors about a path the user gave (``-o some_file/x``, a folder without write permission): a one-line
#: error naming the path, as for any other bad input.
_PATH_ERRORS = (NotADirectoryError, IsADirectoryError, FileExistsError, PermissionError)


def path_error_message(exc: OSError) -> str:
    """``exc`` (one of :data:`_PATH_ERRORS`) as one actionable line."""
    name = Path(str(exc.filename))
    blocker = file_in_the_way(name) or (name if isinstance(exc, FileExistsError) and name.is_file() else None)
    hint = f" ({blocker} is a file, not a folder; give a path under a folder)" if blocker is not None else ""
    return f"cannot use {name}: {exc.strerror or exc}{hint}"


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


class ProgressLine:
    """done/total, rate and ETA of a long run, as one status string; and, for a log (not a terminal, where
    a bar is never redrawn), when the next plain line is due (every ``every`` seconds; 0: never).

    The rate counts this run's sessions only (``done_before``, resumed from an earlier run, took no time here).
    """

    def __init__(self, total: int, every: float = 10.0, clock: Any = None) -> None:
        import time

        self.total = total
        self.every = every
        self.clock = clock or time.monotonic
        self.started = self.clock()
        self.last_line = self.started
        self.done = 0

    def update(self, done_before: int, done_now: int, extra: str = "") -> str:
        self.done = done_before + done_now
        elapsed = self.clock() - self.started
        rate = done_now / elapsed if elapsed > 0 else 0.0
        left = self.total - self.done
        eta = _duration(left / rate) if rate > 0 else "?"
        return f"{self.done}/{self.total} · {rate:.2f}/s · ETA {eta}" + (f" · {extra}" if extra else "")

    def due(self) -> bool:
        now = self.clock()
        if self.every <= 0 or (now - self.last_line < self.every and self.done < self.total):
            return False
        self.last_line = now
        return True


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def _pin_hash_seed() -> None:
    """Re-exec with PYTHONHASHSEED=0 unless already pinned.

    AgentDojo's calendar orders event participants by ``set`` iteration, which follows the per-process
    string-hash seed: unpinned, a seed recorded in one process drifts when replayed in another (the
    fidelity audit found this on 5 of the 97 oracle seeds). Pinning the seed, like pinning the clock,
    makes the environment reproducible; the value is recorded in every AgentDojo environment spec.
    """
    import os

    if os.environ.get("PYTHONHASHSEED") != "0" and not os.environ.get("FAILFORGE_NO_REEXEC"):
        env = dict(os.environ, PYTHONHASHSEED="0")
        os.execve(sys.executable, [sys.executable, "-m", "failforge", *sys.argv[1:]], env)


def _interrupt_on_sigterm() -> None:
    """SIGTERM stops a command the way Ctrl-C does (KeyboardInterrupt in the main thread), so a campaign
    killed by a scheduler puts its attempts back in the queue instead of losing them."""
    import signal

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, handler)


def main() -> None:  # pragma: no cover - console entry
    _pin_hash_seed()
    _interrupt_on_sigterm()
    try:
        import failforge.cli  # noqa: F401 - registers every command on app

        app(prog_name="failforge")
    except FailforgeError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}")  # a message's own [brackets] are text, not markup
        sys.exit(2)
    except _PATH_ERRORS as exc:
        if exc.filename is None:
            raise
        console.print(f"[red]error:[/] {escape(path_error_message(exc))}")
        sys.exit(2)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]")
        sys.exit(130)
