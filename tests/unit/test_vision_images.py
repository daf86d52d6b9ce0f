"""Images at the model boundary: stored once by sha256, hashed by sha256, rejected images named; P.1/P.2 rules."""

from __future__ import annotations

import hashlib
import io
import json

import pytest

from failforge.errors import ModelUnavailable
from failforge.images import (
    REF_PREFIX,
    ImageInputRejected,
    ImageMissing,
    ImageStore,
    canonical_parts,
    externalise,
    image_part,
    image_refs,
    image_rejection,
    inline,
    last_image,
)
from failforge.injection._perception import misreadings
from failforge.judgement._perception import check_p1, check_p2
from failforge.llm import request_hash
from failforge.trajectory import ComponentSpec, Step, Task, ToolCall, Trajectory


def _png(colour: tuple[int, int, int]) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (8, 8), colour).save(out, format="PNG")
    return out.getvalue()


def _body(png: bytes, text: str = "Click on the OK button.") -> dict:
    return {
        "model": "m",
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": [{"type": "text", "text": text}, image_part(png)]},
        ],
    }


def test_a_stored_request_carries_the_image_hash_not_its_bytes(tmp_path) -> None:
    store = ImageStore(tmp_path)
    png = _png((255, 0, 0))
    body = _body(png)
    stored = externalise(body, store)
    url = stored["messages"][1]["content"][1]["image_url"]["url"]
    digest = hashlib.sha256(png).hexdigest()
    assert url == REF_PREFIX + digest and "base64" not in json.dumps(stored)
    assert store.path(digest).read_bytes() == png
    assert body["messages"][1]["content"][1]["image_url"]["url"].startswith(
        "data:image/png;base64,"
    )  # the sent body is untouched
    assert inline(stored, store) == body
    assert image_refs(stored) == image_refs(body) == [digest]
    assert last_image(stored, store) == png


def test_request_hash_is_the_same_inline_or_by_reference_and_changes_with_one_pixel(tmp_path) -> None:
    store = ImageStore(tmp_path)
    body = _body(_png((255, 0, 0)))
    assert request_hash(body) == request_hash(externalise(body, store))
    assert canonical_parts(body) == externalise(body, store)
    assert request_hash(_body(_png((255, 0, 1)))) != request_hash(body)


def test_a_missing_or_edited_image_is_named(tmp_path) -> None:
    store = ImageStore(tmp_path)
    digest = store.put(_png((0, 0, 255)))
    store.path(digest).write_bytes(_png((0, 0, 254)))
    with pytest.raises(ImageMissing, match="does not hash to its name"):
        store.get(digest)
    with pytest.raises(ImageMissing, match="not in the image store"):
        store.get("0" * 64)


def test_an_endpoint_rejecting_images_is_one_line_naming_the_model_and_the_fallback() -> None:
    refused = ModelUnavailable(
        "model endpoint http://x/v1/chat/completions refused the request with HTTP 400: image input is not supported"
    )
    error = image_rejection(refused, _body(_png((1, 2, 3))))
    assert isinstance(error, ImageInputRejected)
    assert "'m'" in str(error) and "observation='dom'" in str(error) and "\n" not in str(error)
    text_only = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert image_rejection(refused, text_only) is refused  # no image sent: the endpoint's own error stands


def _seed(first: str, tool: str, observation: str, instruction: str = 'Enter "Jerald" into the field.') -> Trajectory:
    steps = [
        Step(index=0, kind="task", agent="user", role="user", content=instruction),
        Step(
            index=1,
            kind="agent",
            agent="agent",
            role="assistant",
            tool_calls=[ToolCall(id="c0", name=tool, arguments=first)],
        ),
        Step(
            index=2,
            kind="tool",
            agent="environment",
            role="tool",
            content=observation,
            tool_name=tool,
            tool_call_id="c0",
        ),
        Step(index=3, kind="agent", agent="agent", role="assistant", content="done"),
    ]
    return Trajectory(
        id="s",
        task=Task(benchmark="miniwob", task_id="t", instruction=instruction),
        steps=steps,
        environment=ComponentSpec(name="miniwob"),
        harness=ComponentSpec(name="failforge.miniwob_vision"),
        model=ComponentSpec(name="m"),
    )


def _agent(name: str, arguments: str) -> Step:
    return Step(
        index=1,
        kind="agent",
        agent="agent",
        role="assistant",
        tool_calls=[ToolCall(id="c9", name=name, arguments=arguments)],
    )


def test_p2_is_a_click_outside_the_box_the_dom_reported() -> None:
    seed = _seed('{"x": 18, "y": 84}', "click", 'clicked at (18, 84) on [6] button "Ok" box=(2, 74, 33, 21)\nurl: x')
    assert check_p2(seed, _agent("click", '{"x": 41, "y": 84}'), 1)[0] is True
    inside, why = check_p2(seed, _agent("click", '{"x": 30, "y": 90}'), 1)
    assert inside is False and "inside the box" in why
    assert check_p2(seed, _agent("type", '{"text": "a"}'), 1)[0] is False


def test_p1_is_a_misread_value_the_page_does_not_render() -> None:
    seed = _seed('{"text": "Jerald"}', "type", "url: x")
    assert check_p1(seed, _agent("type", '{"text": "JeraId"}'), 1)[0] is True
    assert check_p1(seed, _agent("type", '{"text": "Jerald"}'), 1)[0] is False
    assert check_p1(seed, _agent("type", '{"text": "Something else entirely"}'), 1)[0] is False
    clicked = _seed('{"x": 1, "y": 1}', "click", "url: x")
    assert check_p1(clicked, _agent("click", '{"x": 3, "y": 3}'), 1)[0] is None  # semantic: the judge path


def test_misreadings_are_confusable_single_substitutions() -> None:
    found = misreadings("Jerald")
    assert "JeraId" in found and "Jerald" not in found
    assert all(abs(len(v) - 6) <= 1 for v in found)


def test_http_upstream_names_a_text_only_model_refusing_a_screenshot() -> None:
    import httpx

    from failforge.llm import HttpUpstream

    refuse = httpx.MockTransport(
        lambda request: httpx.Response(
            400, json={"error": {"message": "Invalid content type. image_url is only supported by certain models."}}
        )
    )
    upstream = HttpUpstream("http://text-only.invalid/v1", api_key_env=None, model="text-model", transport=refuse)
    with pytest.raises(ImageInputRejected, match="model 'text-model' rejects image input") as caught:
        upstream({"model": "text-model", **_body(_png((9, 9, 9)))} | {"model": "text-model"})
    assert "observation='dom'" in str(caught.value)
    with pytest.raises(ModelUnavailable) as plain:
        upstream({"model": "text-model", "messages": [{"role": "user", "content": "hi"}]})
    assert not isinstance(plain.value, ImageInputRejected)
