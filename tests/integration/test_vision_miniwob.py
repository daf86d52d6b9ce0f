"""Screenshots to the model on real MiniWoB++ pages: seeds, byte-exact replay, P.2 gold, the image export.

The model is the pixel vision policy (it finds its targets by image processing and OCR on the PNG the
request carries, never the DOM); Chromium, the pages, MiniWoB's reward, replay, the campaign and the
filters are real. One task (click-button) keeps the slice small on a loaded machine.
"""

from __future__ import annotations

import base64
import json
import shutil

import pytest

from _required import require

require("chromium")
require("tesseract")

from failforge.attribution.importers.failforge_gold import from_trajectory  # noqa: E402
from failforge.attribution.importers.whowhen_pro import import_whowhen_pro  # noqa: E402
from failforge.campaign import CampaignConfig, ResolvedModels, run_campaign  # noqa: E402
from failforge.environments.miniwob import env_spec  # noqa: E402
from failforge.environments.miniwob._vision_policy import vision_script  # noqa: E402
from failforge.errors import DomDrift, PromptDrift  # noqa: E402
from failforge.exporters.whowhen_pro import export_whowhen_pro  # noqa: E402
from failforge.harnesses.miniwob_vision import VisionAgent  # noqa: E402
from failforge.images import REF_PREFIX, ImageStore, image_refs  # noqa: E402
from failforge.llm import ModelEndpoint, OracleResponder  # noqa: E402
from failforge.replay import replay  # noqa: E402
from failforge.seeds import record  # noqa: E402
from failforge.testing import LoopbackModelServer  # noqa: E402
from failforge.trajectory import ComponentSpec, Trajectory, load_jsonl, write_jsonl  # noqa: E402


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("images"))
    mp = pytest.MonkeyPatch()
    mp.setenv("FAILFORGE_IMAGE_DIR", path)
    yield path
    mp.undo()


@pytest.fixture(scope="module")
def seed(images: str, tmp_path_factory: pytest.TempPathFactory) -> Trajectory:
    spec = env_spec(
        "click-button",
        1,
        cache_dir=str(tmp_path_factory.mktemp("cache")),
        cache_mode="record",
        action_space="coordinate",
    )
    return record(
        env_spec=spec,
        harness=VisionAgent(),
        model=ComponentSpec(name="vision-policy", config={"role": "agent"}),
        upstream=OracleResponder(vision_script, name="miniwob.vision_policy"),
        oracle=True,
        trajectory_id="vision-click-button",
    )


def test_the_seed_is_recorded_on_screenshots_stored_once(seed: Trajectory, images: str) -> None:
    assert seed.outcome is not None and seed.outcome.success and seed.outcome.details["raw_reward"] > 0
    first = seed.steps[1]
    assert first.model_call is not None
    stored = json.dumps(first.model_call.request)
    assert REF_PREFIX in stored and "base64" not in stored  # the request names the image, it does not carry it
    [digest] = image_refs(first.model_call.request)
    assert ImageStore(images).get(digest)[:8] == b"\x89PNG\r\n\x1a\n"
    click = json.loads(first.tool_calls[0].arguments)
    assert first.tool_calls[0].name == "click" and set(click) == {"x", "y"}
    tool = seed.steps[2]
    assert tool.images and "clicked at" in (tool.content or "") and '"Ok"' in (tool.content or "")


def test_replay_is_identical_and_a_changed_screenshot_is_a_drift_at_its_step(seed: Trajectory) -> None:
    assert replay(seed, raise_on_drift=False).identical
    edited = seed.model_copy(deep=True)
    request = edited.steps[1].model_call.request  # type: ignore[union-attr]
    part = request["messages"][1]["content"][1]
    part["image_url"]["url"] = REF_PREFIX + "f" * 64
    report = replay(edited, raise_on_drift=False)
    assert isinstance(report.drift, PromptDrift) and report.drift.step == 1 and "f" * 12 in (report.drift.diff or "")
    after = seed.model_copy(deep=True)
    after.steps[2].images = ["e" * 64]
    report = replay(after, raise_on_drift=False)
    assert isinstance(report.drift, DomDrift) and report.drift.step == 2 and "screenshot" in str(report.drift)


def test_p2_gold_is_kept_exported_with_its_images_and_read_back(seed: Trajectory, images: str, tmp_path) -> None:
    write_jsonl(tmp_path / "seeds.jsonl", [seed])
    with LoopbackModelServer(agent_policy=lambda agent, body: vision_script(0, body)) as server:
        endpoint = ModelEndpoint(base_url=server.base_url, model="vision-policy", api_key_env=None)
        config = CampaignConfig(
            seeds=[str(tmp_path / "seeds.jsonl")],
            output=str(tmp_path / "out"),
            guide_kind="rules",
            plan={"steps_per_seed": 1, "modes_per_step": 1, "modes": ["P.2"]},
        )
        summary = run_campaign(config, ResolvedModels(agent=endpoint, guide=endpoint))
    assert summary.failed == 0
    gold, _ = load_jsonl(tmp_path / "out" / "gold.jsonl")
    assert len(gold) == 1
    [g] = gold
    assert g.label is not None and g.label.mode_code == "P.2" and g.outcome is not None and g.outcome.success is False
    injected = json.loads(g.steps[1].tool_calls[0].arguments)
    assert injected != json.loads(seed.steps[1].tool_calls[0].arguments)
    conformance = next(v for v in g.label.filter_verdicts if v.name == "mode_conformance")
    assert conformance.passed and "outside the box" in conformance.reason

    summary_out = export_whowhen_pro(gold, tmp_path / "release")
    assert summary_out.written == 1 and not summary_out.skipped
    # the image_gui split (render/gui.py): screenshots embedded base64 as the release's image rows carry them
    row = json.loads((tmp_path / "release" / "data" / "image_gui.jsonl").read_text().splitlines()[0])
    task, trajectory = json.loads(row["task"]), json.loads(row["trajectory"])
    assert row["framework"] == "agentoccam" and base64.b64decode(task["images"][0]["data"])[:8] == b"\x89PNG\r\n\x1a\n"
    shots = [a["observation_images"][0]["sha256"] for a in trajectory if a["kind"] == "action"]
    assert shots and set(shots) <= {r.sha256 for s in from_trajectory(g).steps for r in s.images}
    [back] = list(import_whowhen_pro(tmp_path / "release"))
    assert back.modality == "image"  # type: ignore[union-attr]
    assert all(s.images for s in back.steps if s.kind == "agent")  # type: ignore[union-attr]
    decisive = g.steps[g.label.decisive_step].content or ""
    assert back.steps[back.gold.step].content == decisive  # type: ignore[union-attr]

    # The campaign folder carries its images: copied elsewhere, with an empty store, it reads and exports whole.
    assert {p.stem for p in (tmp_path / "out" / "images").iterdir()} >= {
        r.sha256 for s in from_trajectory(g).steps for r in s.images
    }
    shutil.copytree(tmp_path / "out", tmp_path / "moved")
    mp = pytest.MonkeyPatch()
    mp.setenv("FAILFORGE_IMAGE_DIR", str(tmp_path / "empty-store"))
    try:
        moved, bad = load_jsonl(tmp_path / "moved" / "gold.jsonl")
        assert not bad and [m.id for m in moved] == [g.id]
        assert export_whowhen_pro(moved, tmp_path / "release2").written == 1
        lost = from_trajectory(g).steps[2].images[0].sha256
        (tmp_path / "moved" / "images" / f"{lost}.png").unlink()
        left, bad = load_jsonl(tmp_path / "moved" / "gold.jsonl")
    finally:
        mp.undo()
    assert (
        left == [] and len(bad) == 1 and lost in str(bad[0]) and g.id in str(bad[0]) and "gold.jsonl:1" in str(bad[0])
    )


def test_p1_gold_is_a_misread_rendered_value_that_miniwob_scores_wrong(images: str, tmp_path) -> None:
    spec = env_spec("enter-text", 1, cache_dir=str(tmp_path / "cache"), cache_mode="record", action_space="coordinate")
    seed = record(
        env_spec=spec,
        harness=VisionAgent(),
        model=ComponentSpec(name="vision-policy", config={"role": "agent"}),
        upstream=OracleResponder(vision_script, name="miniwob.vision_policy"),
        oracle=True,
        trajectory_id="vision-enter-text",
    )
    assert seed.outcome is not None and seed.outcome.success
    typed = next(
        i for i, s in enumerate(seed.steps) if s.kind == "agent" and s.tool_calls and s.tool_calls[0].name == "type"
    )
    write_jsonl(tmp_path / "seeds.jsonl", [seed])
    with LoopbackModelServer(agent_policy=lambda agent, body: vision_script(0, body)) as server:
        endpoint = ModelEndpoint(base_url=server.base_url, model="vision-policy", api_key_env=None)
        config = CampaignConfig(
            seeds=[str(tmp_path / "seeds.jsonl")],
            output=str(tmp_path / "out"),
            guide_kind="rules",
            plan={"steps_per_seed": 4, "modes_per_step": 1, "modes": ["P.1"]},
        )
        summary = run_campaign(config, ResolvedModels(agent=endpoint, guide=endpoint))
    assert summary.failed == 0
    gold, _ = load_jsonl(tmp_path / "out" / "gold.jsonl")
    [g] = gold
    assert g.label is not None and g.label.mode_code == "P.1" and g.label.decisive_step == typed
    wanted = json.loads(seed.steps[typed].tool_calls[0].arguments)["text"]
    got = json.loads(g.steps[typed].tool_calls[0].arguments)["text"]
    assert got != wanted and wanted in seed.task.instruction and got not in seed.task.instruction
    assert (
        g.outcome is not None and g.outcome.details["raw_reward"] < 0
    )  # MiniWoB scored the submitted misreading wrong
