"""Bids, observation text, fingerprint normalisation, pinned world, tool errors, screenshots."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest

from _required import require

require("chromium")

from failforge.environments.miniwob import (  # noqa: E402
    EXCLUDE,
    NORMALISER_VERSION,
    MiniWoBConfig,
    MiniWoBEpisode,
    env_spec,
    parse_observation,
    screenshot_path,
)
from failforge.runlog import RunLog  # noqa: E402
from failforge.seeds import oracle_seed  # noqa: E402
from failforge.trajectory import Step  # noqa: E402


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("miniwob-dom-cache"))


def _log() -> RunLog:
    log = RunLog(trajectory_id="dom")
    log.append(Step(index=0, kind="task", agent="user", role="user", content="x"))
    return log


def test_two_fresh_episodes_of_one_seed_read_identically(cache_dir: str) -> None:
    with (
        MiniWoBEpisode("email-inbox-reply", 3, cache_dir=cache_dir) as a,
        MiniWoBEpisode("email-inbox-reply", 3, cache_dir=cache_dir) as b,
    ):
        assert a.instruction() == b.instruction()
        assert a.fingerprint() == b.fingerprint()
    with MiniWoBEpisode("email-inbox-reply", 4, cache_dir=cache_dir) as c:
        assert c.fingerprint().digest != a.last_fingerprint().digest


def test_bids_are_unique_stable_and_parse_back(cache_dir: str) -> None:
    with MiniWoBEpisode("click-checkboxes", 1, cache_dir=cache_dir) as episode:
        before = parse_observation(episode.observe())
        bids = [n.bid for n in before]
        assert len(bids) == len(set(bids)) and all(b.isdigit() for b in bids)
        box = next(n for n in before if n.tag == "input" and n.attrs.get("type") == "checkbox")
        assert "unchecked" in box.flags
        text = episode.toolbox(_log()).call("click", f'{{"bid": "{box.bid}"}}', "call_0")
        after = {n.bid: n for n in parse_observation(text)}
        assert "checked" in after[box.bid].flags  # same bid, same element, new state
        assert {n.bid for n in before} <= set(after)


def test_fingerprint_declares_its_normaliser_and_excludes_volatile_parts(cache_dir: str) -> None:
    with MiniWoBEpisode("click-button", 1, cache_dir=cache_dir) as episode:
        fp = episode.fingerprint()
        assert fp.parts["~normaliser"] == NORMALISER_VERSION
        assert fp.parts["~url"] == "http://miniwob.failforge/miniwob/click-button.html"
        assert "done=false" in fp.parts["~episode"]
        text = "\n".join(f"{k} {v}" for k, v in fp.parts.items())
        for excluded in EXCLUDE["ids"]:
            assert excluded not in text
        assert "style=" not in text and "data-wob_ref" not in text and "<script" not in text
        # the HUD timer ticks with virtual time; the fingerprint does not move with it
        episode.session.run_for(3000)
        assert episode.fingerprint() == fp


def test_the_world_is_pinned(cache_dir: str) -> None:
    with MiniWoBEpisode(
        "click-button", 1, cache_dir=cache_dir, clock="2030-01-02T03:04:05+00:00", timezone="Asia/Tokyo", locale="de-DE"
    ) as episode:
        world = episode.page.evaluate(
            "() => ({now: Date.now(), offset: new Date().getTimezoneOffset(), lang: navigator.language,"
            " w: window.innerWidth, h: window.innerHeight, tz: Intl.DateTimeFormat().resolvedOptions().timeZone})"
        )
        # virtual time moved only by the recorded settle time (plus the ready poll, none here)
        assert world["now"] == 1893553445000 + episode.config.settle_ms
        assert world["offset"] == -540 and world["tz"] == "Asia/Tokyo" and world["lang"] == "de-DE"
        assert (world["w"], world["h"]) == (500, 320)
        time.sleep(0.3)
        assert episode.page.evaluate("() => Date.now()") == world["now"], "the clock must not move in real time"


def test_env_spec_records_every_pin(cache_dir: str) -> None:
    spec = env_spec("enter-text", 5, cache_dir=cache_dir)
    config = MiniWoBConfig.model_validate(spec.config)
    assert spec.name == "miniwob" and spec.version
    for key in (
        "seed",
        "viewport",
        "locale",
        "timezone",
        "clock",
        "settle_ms",
        "cache_dir",
        "cache_mode",
        "normaliser",
        "chromium",
        "chromium_args",
    ):
        assert key in spec.config
    assert config.seed == 5 and config.math_random_seed == 5 and config.cache_dir == cache_dir


def test_tool_errors_are_fixed_text_the_model_can_read(cache_dir: str) -> None:
    with MiniWoBEpisode("enter-text", 1, cache_dir=cache_dir) as episode:
        toolbox = episode.toolbox(_log())
        assert toolbox.call("click", '{"bid": "9999"}', "c0").startswith("Error: no element with bid 9999 on the page")
        assert toolbox.call("click", "{}", "c1").startswith("Error: invalid arguments for click: bid: Field required")
        assert toolbox.call("fly", "{}", "c2").startswith("Error: unknown tool 'fly'")
        assert toolbox.call("type", "not json", "c3").startswith("Error: the arguments of type are not a JSON object")
        nodes = parse_observation(episode.observe())
        button = next(n for n in nodes if n.tag == "button")
        assert toolbox.call("type", f'{{"bid": {button.bid}, "text": "x"}}', "c4").startswith(
            f"Error: element [{button.bid}] is not a text field"
        )
        assert toolbox.call("select", f'{{"bid": "{button.bid}", "option": "x"}}', "c5").startswith(
            f"Error: element [{button.bid}] is not a <select>"
        )
        assert toolbox.call("press", '{"key": "NoSuchKey"}', "c6").startswith("Error: unknown key 'NoSuchKey'")
        assert toolbox.call("goto", '{"url": "file:///etc/passwd"}', "c7").startswith(
            "Error: goto only opens http(s) URLs"
        )
        answered = toolbox.call("answer", '{"text": "42"}', "c8")
        assert answered.startswith("answer recorded: 42\nurl: ")
        toolbox.call("click", f'{{"bid": "{button.bid}"}}', "c9")  # submit ends the episode (wrong text: -1)
        assert toolbox.call("scroll", '{"dy": 10}', "c10").startswith("Error: the task episode is over")
        outcome = episode.evaluate(None, [])
        assert outcome.success is False and outcome.details["done"] and outcome.details["answers"] == ["42"]


def test_scroll_and_select_and_press(cache_dir: str) -> None:
    with MiniWoBEpisode("choose-list", 1, cache_dir=cache_dir) as episode:
        toolbox = episode.toolbox(_log())
        select = next(n for n in parse_observation(episode.observe()) if n.tag == "select")
        options = [n.text for n in parse_observation(episode.observe()) if n.tag == "option"]
        text = toolbox.call("select", f'{{"bid": "{select.bid}", "option": "{options[-1]}"}}', "c0")
        assert next(n for n in parse_observation(text) if n.tag == "select").attrs["value"] == options[-1]
        missing = toolbox.call("select", f'{{"bid": "{select.bid}", "option": "Atlantis"}}', "c1")
        assert "has no option 'Atlantis'" in missing
        assert not toolbox.call("press", '{"key": "Tab"}', "c2").startswith("Error")
        assert not toolbox.call("scroll", '{"dx": 0, "dy": 40}', "c3").startswith("Error")


def test_screenshots_are_stored_by_sha256_and_referenced_from_the_steps(tmp_path: Path) -> None:
    seed = oracle_seed(
        "miniwob",
        "click-option",
        {"cache_dir": str(tmp_path / "cache"), "screenshots": True, "screenshot_dir": str(tmp_path / "shots")},
    )
    tool_steps = [s for s in seed.steps if s.kind == "tool"]
    assert tool_steps and all(len(s.images) == 1 for s in tool_steps)
    config = MiniWoBConfig.model_validate(seed.environment.config)
    for step in tool_steps:
        path = screenshot_path(config, step.images[0])
        assert path.is_file() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == step.images[0]
