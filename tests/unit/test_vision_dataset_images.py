"""Images travel beside the trajectories: written into images/ next to each JSONL file, read from there
first, a missing screenshot skips only its record; a text-only endpoint is named on the async path too."""

from __future__ import annotations

import asyncio
import hashlib
import io
import shutil
from pathlib import Path

import pytest

from failforge.images import (
    IMAGE_DIR_ENV,
    REF_PREFIX,
    ImageInputRejected,
    ImageMissing,
    ImageStore,
    digests_in_text,
    externalise,
    image_part,
    last_image,
)
from failforge.llm import request_hash
from failforge.trajectory import (
    ComponentSpec,
    ModelCallRef,
    Step,
    Task,
    Trajectory,
    append_jsonl,
    load_jsonl,
    write_jsonl,
)


def _png(colour: tuple[int, int, int]) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (8, 8), colour).save(out, format="PNG")
    return out.getvalue()


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ImageStore:
    """A fresh image store, as on a machine that never saw these images."""
    monkeypatch.setenv(IMAGE_DIR_ENV, str(tmp_path / "store"))
    return ImageStore()


def _record(rid: str, first: bytes, after: bytes, store: ImageStore) -> Trajectory:
    """A screenshot run as the boundary stores it: request images by reference, the tool step's screenshot by sha."""
    sent = {
        "model": "m",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Click OK."}, image_part(first)]}],
    }
    stored = externalise(sent, store)
    shot = store.put(after)
    steps = [
        Step(index=0, kind="task", agent="user", role="user", content="Click OK."),
        Step(
            index=1,
            kind="agent",
            agent="agent",
            role="assistant",
            content="ok",
            model_call=ModelCallRef(
                stream="agent", ordinal=0, request=stored, request_hash=request_hash(sent), response={"choices": []}
            ),
        ),
        Step(
            index=2,
            kind="tool",
            agent="environment",
            role="tool",
            content="done",
            tool_name="click",
            tool_call_id="c0",
            images=[shot],
        ),
    ]
    return Trajectory(
        id=rid,
        task=Task(benchmark="miniwob", task_id="t", instruction="Click OK."),
        steps=steps,
        environment=ComponentSpec(name="miniwob"),
        harness=ComponentSpec(name="failforge.miniwob_vision"),
        model=ComponentSpec(name="m"),
    )


def test_a_written_file_carries_its_images_and_the_copied_folder_reads_without_the_store(
    tmp_path: Path, store: ImageStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    red, green, blue = _png((255, 0, 0)), _png((0, 255, 0)), _png((0, 0, 255))
    records = [_record("a", red, green, store), _record("b", red, blue, store)]
    write_jsonl(tmp_path / "made" / "seeds.jsonl", records[:1])
    append_jsonl(tmp_path / "made" / "gold.jsonl", records[1:])
    folder = tmp_path / "made" / "images"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        f"{hashlib.sha256(b).hexdigest()}.png" for b in (red, green, blue)
    )  # the shared red once
    # Another machine: the folder copied, an empty store.
    shutil.copytree(tmp_path / "made", tmp_path / "moved")
    monkeypatch.setenv(IMAGE_DIR_ENV, str(tmp_path / "empty-store"))
    good, bad = load_jsonl(tmp_path / "moved" / "gold.jsonl")
    assert bad == [] and [r.id for r in good] == ["b"]
    request = good[0].steps[1].model_call.request  # type: ignore[union-attr]
    assert REF_PREFIX in str(request) and "base64" not in str(request)
    assert last_image(request) == red  # resolved from beside the file, checked against its hash
    assert ImageStore().get(good[0].steps[2].images[0]) == blue  # brought into the empty store from beside the file
    assert good[0].steps[1].model_call.request_hash == records[1].steps[1].model_call.request_hash  # type: ignore[union-attr]


def test_a_screenshot_missing_from_the_folder_skips_that_record_only(
    tmp_path: Path, store: ImageStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    red, green, blue = _png((255, 0, 0)), _png((0, 255, 0)), _png((0, 0, 255))
    path = tmp_path / "campaign" / "gold.jsonl"
    append_jsonl(path, [_record("keeps", red, green, store), _record("loses", red, blue, store)])
    lost = hashlib.sha256(blue).hexdigest()
    (path.parent / "images" / f"{lost}.png").unlink()
    assert store.has(lost)  # still in the cache: a dataset folder must be whole all the same
    good, bad = load_jsonl(path)
    assert [r.id for r in good] == ["keeps"]
    assert len(bad) == 1
    message = str(bad[0])
    assert (
        str(path) in message
        and ":2:" in message
        and "record loses" in message
        and lost in message
        and "\n" not in message
    )


def test_a_record_naming_an_image_that_exists_nowhere_is_not_written(tmp_path: Path, store: ImageStore) -> None:
    record = _record("a", _png((1, 1, 1)), _png((2, 2, 2)), store)
    ghost = "f" * 64
    record.steps[2].images = [ghost]
    with pytest.raises(ImageMissing, match=ghost):
        append_jsonl(tmp_path / "out" / "gold.jsonl", [record])
    assert not (tmp_path / "out" / "gold.jsonl").exists()


def test_text_records_write_no_images_folder_and_refs_are_found_in_any_images_list(tmp_path: Path) -> None:
    plain = Trajectory(
        id="t",
        task=Task(benchmark="b", task_id="t", instruction="hi"),
        steps=[Step(index=0, kind="task", agent="user", role="user", content="hi")],
        environment=ComponentSpec(name="e"),
        harness=ComponentSpec(name="h"),
        model=ComponentSpec(name="m"),
    )
    write_jsonl(tmp_path / "text.jsonl", [plain])
    assert not (tmp_path / "images").exists()
    a, b = "a" * 64, "b" * 64
    assert digests_in_text(f'{{"url":"{REF_PREFIX}{a}","images":[{{"path":"images/{b}.png","sha256":"{b}"}}]}}') == [
        a,
        b,
    ]


def test_the_async_client_names_a_text_only_model_rejecting_image_parts() -> None:
    from failforge.llm import HttpUpstream
    from failforge.testing import LoopbackModelServer

    body = {
        "model": "text-model",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Click OK."}, image_part(_png((3, 3, 3)))]}],
    }
    with LoopbackModelServer(text_only=True) as server:
        upstream = HttpUpstream(server.base_url, api_key_env=None, model="text-model")
        try:
            with pytest.raises(ImageInputRejected) as caught:
                asyncio.run(upstream.acall(body))
            text_reply = asyncio.run(
                upstream.acall({"model": "text-model", "messages": [{"role": "user", "content": "hi"}]})
            )
        finally:
            upstream.close()
    message = str(caught.value)
    assert (
        message.startswith("model 'text-model' rejects image input")
        and "observation='dom'" in message
        and "\n" not in message
    )
    assert text_reply["choices"]  # the same server answers text: only the image parts were refused


def test_a_campaign_result_naming_a_missing_image_is_kept_as_a_failed_attempt(
    tmp_path: Path, store: ImageStore
) -> None:
    """The campaign's driver does not die on it: the result becomes a failed (infrastructure, retried) attempt
    without the trajectory, which is written, and the rest goes on."""
    from failforge.campaign._run import _unwritable
    from failforge.gold import AttemptResult, Rejection

    record = _record("a", _png((1, 1, 1)), _png((2, 2, 2)), store)
    record.steps[2].images = ["e" * 64]
    record.provenance["attempt_id"] = "seed@2:P.2#0"
    with pytest.raises(ImageMissing) as raised:
        append_jsonl(tmp_path / "out" / "gold.jsonl", [record])
    failed = _unwritable(AttemptResult("gold", record), None, raised.value)
    assert failed.status == "failed" and isinstance(failed.record, Rejection) and failed.attempt_id == "seed@2:P.2#0"
    assert (
        failed.record.stage == "output"
        and failed.record.error_kind == "infrastructure"
        and "e" * 12 in failed.record.reasons[0]
    )
    append_jsonl(tmp_path / "out" / "failed.jsonl", [failed.record])  # names no image: written
    rejected = Rejection(
        attempt_id="x",
        seed_id="s",
        step=2,
        mode="P.2",
        sample=0,
        status="rejected",
        stage="filters",
        reasons=["r"],
        trajectory=record,
    )
    again = _unwritable(AttemptResult("rejected", rejected), None, raised.value)
    assert again.status == "failed" and again.record.trajectory is None and again.record.reasons[1:] == ["r"]  # type: ignore[union-attr]
