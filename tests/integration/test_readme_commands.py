"""Every ``failforge`` command the README shows is one the CLI accepts as written.

The commands are read from the README's ``bash`` blocks (continuation lines joined, comments dropped) and each
is parsed by the real CLI exactly as a shell would pass it: the command exists, every option exists and every
required option or argument is given. Running each for real would take hours (recording every AgentDojo
task, campaigns) or a network endpoint; parsing is where "Missing option '--task'" comes from, so it is
what is checked for all of them, and the ones that finish in seconds with no input are also run.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main

from failforge.cli import app

README = Path(__file__).resolve().parents[2] / "README.md"
#: Commands run for real: quick, no input file, no network, no model.
RUN = ("failforge taxonomy", "failforge plugins")


def readme_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    out: list[str] = []
    for block in blocks:
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["failforge"]:
                out.append(shlex.join(words))
    return out


def test_the_readme_shows_commands() -> None:
    commands = readme_commands()
    assert len(commands) >= 20 and any(c.startswith("failforge record agentdojo --suite banking") for c in commands)


@pytest.mark.parametrize("command", readme_commands())
def test_each_readme_command_parses_as_written(command: str) -> None:
    words = shlex.split(command)[1:]
    root = typer.main.get_command(app)
    ctx = root.make_context("failforge", list(words))
    cmd: Any = root
    args = _rest(ctx)
    while _is_group(cmd) and args:
        name, sub, args = cmd.resolve_command(ctx, args)
        assert sub is not None, f"{command}: no command {name!r}"
        ctx = sub.make_context(name or "", list(args), parent=ctx)  # raises on a missing or unknown option
        cmd, args = sub, _rest(ctx) if _is_group(sub) else []


def _is_group(cmd: Any) -> bool:
    """A command group (typer ships its own copy of click, so no ``isinstance`` against click's classes)."""
    return hasattr(cmd, "resolve_command")


def _rest(ctx: Any) -> list[str]:
    """What a group left for its subcommand (click 8.2 keeps the command name apart, in ``_protected_args``)."""
    return [*(getattr(ctx, "_protected_args", None) or getattr(ctx, "protected_args", [])), *ctx.args]


@pytest.mark.parametrize("command", [c for c in readme_commands() if c in RUN])
def test_the_quick_readme_commands_run(command: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "failforge", *shlex.split(command)[1:]], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()
