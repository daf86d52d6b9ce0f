"""The boundary answers a request it cannot serve so that no client retries it, and keeps the typed error."""

from __future__ import annotations

import httpx
import openai
import pytest

from failforge.errors import RecordingExhausted
from failforge.llm import BOUNDARY_BASE_URL, ModelBoundary
from failforge.runlog import RunLog
from failforge.trajectory import Step


def _boundary_with_no_recording() -> tuple[ModelBoundary, list[httpx.Request]]:
    log = RunLog(trajectory_id="t")
    log.append(Step(index=0, kind="task", agent="user", role="user", content="hi"))
    boundary = ModelBoundary(log, upstream=None)
    sent: list[httpx.Request] = []
    real = boundary.handle_request

    def counted(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return real(request)

    boundary.handle_request = counted  # type: ignore[method-assign]
    return boundary, sent


def test_an_sdk_client_with_retries_on_sends_a_boundary_error_once():
    boundary, sent = _boundary_with_no_recording()
    client = openai.OpenAI(
        base_url=BOUNDARY_BASE_URL, api_key="x", max_retries=3, http_client=httpx.Client(transport=boundary)
    )
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert len(sent) == 1
    assert isinstance(boundary.failure, RecordingExhausted) and boundary.failure.step == 1
    assert info.value.status_code == 400 and info.value.response.headers["x-should-retry"] == "false"
    assert "RecordingExhausted" in str(info.value)


def test_the_first_boundary_error_is_the_one_kept():
    boundary, sent = _boundary_with_no_recording()
    client = openai.OpenAI(
        base_url=BOUNDARY_BASE_URL, api_key="x", max_retries=0, http_client=httpx.Client(transport=boundary)
    )
    for _ in range(2):
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    first = boundary.failure
    assert len(sent) == 2 and isinstance(first, RecordingExhausted)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "again"}])
    assert boundary.failure is first
