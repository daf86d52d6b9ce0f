"""Keys never reach a file: redaction of known values, key shapes and URL userinfo."""

from __future__ import annotations

import pytest

from failforge.secrets import MASK, Redactor, redact, strip_userinfo

CANARY = "ff-canary-7c1e5b0a9d3f42"


def test_known_values_from_the_environment_and_url_userinfo_are_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FF_TEST_KEY", CANARY)
    redactor = Redactor.for_run(
        ["FF_TEST_KEY", None, "UNSET_VARIABLE"], ["https://alice:s3cretpassw0rd@api.example/v1"]
    )
    text = (
        f'{{"error": "invalid key {CANARY}", "url": "https://alice:s3cretpassw0rd@api.example/v1", "echo":'
        ' "s3cretpassw0rd"}'
    )
    masked = redactor.text(text)
    assert CANARY not in masked and "s3cretpassw0rd" not in masked and "alice" not in masked
    assert masked.count(MASK) >= 3 and "api.example/v1" in masked


@pytest.mark.parametrize(
    "raw",
    [
        "Authorization: Bearer abcdefghijklmnopqrstu",
        "key sk-proj-AbCdEfGhIjKlMnOp1234",
        '{"api_key": "zzzzzzzzzzzzzzzzzz"}',
        "apikey=zzzzzzzzzzzzzzzzzz",
        "http://user:pw12345678@localhost:8000/v1",
    ],
)
def test_key_shapes_are_masked_without_knowing_the_value(raw: str) -> None:
    masked = redact(raw)
    assert masked != raw and MASK in masked


def test_ordinary_text_is_left_alone() -> None:
    text = "Send 100.0 to GB29 NWBK 6016 1331 9268 19 and email bob@example.com about sk-8 (not a key)."
    assert redact(text) == text
    assert Redactor(("short",)).secrets == ("short",)  # explicit values are the caller's choice
    assert Redactor.for_run([], ["http://a:b@h/v1"]).secrets == ()  # one-letter userinfo is not worth masking words for


def test_strip_userinfo() -> None:
    assert strip_userinfo("https://u:k@h:8443/v1") == f"https://{MASK}@h:8443/v1"
    assert strip_userinfo("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
