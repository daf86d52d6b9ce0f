"""The CLI's consoles: the one place user-facing text passes, so secrets are masked there, and output
to a pipe is laid out for a log (one line per message, tables at their natural width)."""

from __future__ import annotations

import io

from rich.table import Table

from failforge.cli._app import PIPE_WIDTH, UserConsole
from failforge.secrets import MASK, Redactor, redact_known, remember, userinfo_secrets

KEY = "plain0123456789secretZZ"  # no key shape: only the remembered value masks it


def test_a_remembered_key_is_masked_in_messages_and_table_cells_even_on_a_colour_terminal() -> None:
    remember([KEY])
    buffer = io.StringIO()
    console = UserConsole(file=buffer, force_terminal=True, color_system="truecolor", width=60)
    table = Table("what", "value")
    table.add_row("last error", f"HTTP 401: wrong key {KEY} (0123456789)")
    console.print(f"[red]error:[/] key {KEY} rejected; sk-abcdefghijklmnop too")
    console.print(table)
    shown = buffer.getvalue()
    # on a terminal the highlighter colours the digits inside the key: masking must come before it
    assert KEY not in shown and "0123456789secret" not in shown and "sk-abcdefghijklmnop" not in shown
    assert shown.count(MASK) >= 3


def test_url_credentials_are_known_as_user_password_and_the_basic_token_a_client_sends() -> None:
    import base64

    url = "https://me:pa%40ss0123456789@host/v1"
    token = base64.b64encode(b"me:pa@ss0123456789").decode()
    assert token in userinfo_secrets(url)
    assert Redactor.for_run([], [url]).text(f"Authorization: Basic {token}") == f"Authorization: Basic {MASK}"
    assert token not in redact_known(f"echo {token}")  # for_run remembered it for the terminal too


def test_a_console_on_a_pipe_neither_folds_messages_nor_cuts_tables() -> None:
    buffer = io.StringIO()
    console = UserConsole(file=buffer)  # not a terminal, no COLUMNS
    assert not console.is_terminal and console.width == PIPE_WIDTH
    message = "error: " + " ".join(f"word{i}" for i in range(60))
    console.print(message)
    table = Table("group", "family F1", "joint")
    table.add_row("all", "32.5", "14.3 [3–51]")
    console.print(table)
    lines = buffer.getvalue().splitlines()
    assert lines[0] == message
    assert any("family F1" in line for line in lines) and any("14.3 [3–51]" in line for line in lines)
    assert "…" not in buffer.getvalue() and max(len(line) for line in lines[1:]) < 60  # natural width, not PIPE_WIDTH
    assert UserConsole(file=io.StringIO(), width=72).width == 72  # an explicit width (or COLUMNS) is kept
