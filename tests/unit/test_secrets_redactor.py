"""The redactor on the texts a run really writes: overlapping secrets, a key echoed in an error body.

What these add to test_secrets.py: when one secret contains another (a proxy user that is the key's
prefix), the longer one must be masked whole, not left with its tail showing; a key-shaped string is
masked by :meth:`Redactor.text` even when the run did not know it; a short value is never treated as a
secret, so ordinary words survive.
"""

from __future__ import annotations

import json

import pytest

from failforge.secrets import MASK, Redactor

KEY = "team42-0f9e8d7c6b5a4f3e"
PROXY = "http://team42-0f9e:pw-7a6b5c4d3e@proxy.internal:3128/v1"


def test_a_secret_inside_another_is_masked_with_all_of_the_longer_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FF_AGENT_KEY", KEY)
    redactor = Redactor.for_run(["FF_AGENT_KEY"], [PROXY])
    basic = (  # base64("team42-0f9e:pw-7a6b5c4d3e"): the Basic credentials an HTTP client sends
        "dGVhbTQyLTBmOWU6cHctN2E2YjVjNGQzZQ=="
    )
    assert set(redactor.secrets) == {KEY, "team42-0f9e", "pw-7a6b5c4d3e", basic}
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}", "code": "invalid_api_key"}})
    masked = redactor.text(body)
    assert KEY not in masked and "8d7c6b5a4f3e" not in masked, masked
    assert masked == body.replace(KEY, MASK)


def test_an_unknown_key_shape_is_masked_by_the_runs_redactor_too() -> None:
    line = "upstream said: 401 for Authorization: Bearer abcdefghijklmnopqrstuvwx"
    masked = Redactor(()).text(line)
    assert "abcdefghijklmnopqrstuvwx" not in masked and masked.endswith(f"Bearer {MASK}")


def test_short_values_are_not_secrets_so_words_survive(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FF_SHORT", "agent")
    redactor = Redactor.for_run(["FF_SHORT"], ["http://bob:pass@h/v1"])
    assert redactor.secrets == ()
    assert redactor.text("the agent passed the task") == "the agent passed the task"
