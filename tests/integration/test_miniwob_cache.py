"""Page loads go through the SHA-256 tool cache; a request with no recording is a CacheMiss naming its URL."""

from __future__ import annotations

import pytest

from _required import require

require("chromium")

from failforge.cache import ToolCache  # noqa: E402
from failforge.environments.miniwob import MiniWoBEpisode  # noqa: E402
from failforge.environments.miniwob._network import CACHE_VERSION, TOOL_NAME  # noqa: E402
from failforge.errors import CacheMiss  # noqa: E402
from failforge.replay import replay  # noqa: E402
from failforge.runlog import Plan, RunLog, addressed  # noqa: E402
from failforge.seeds import oracle_seed  # noqa: E402
from failforge.trajectory import Step, Trajectory  # noqa: E402


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("miniwob-net-cache"))


@pytest.fixture(scope="module")
def seed(cache_dir: str) -> Trajectory:
    return oracle_seed("miniwob", "click-link", {"cache_dir": cache_dir})


def test_recorded_pages_are_keyed_by_the_virtual_origin_not_the_loopback_port(seed: Trajectory, cache_dir: str) -> None:
    assert seed.environment.config["cache_dir"] == cache_dir
    with ToolCache(cache_dir, mode="replay") as cache:
        urls = {entry.args["url"] for entry in cache.entries(TOOL_NAME)}
        versions = {entry.version for entry in cache.entries(TOOL_NAME)}
    assert "http://miniwob.failforge/miniwob/click-link.html" in urls
    assert "http://miniwob.failforge/core/core.js" in urls
    assert all(u.startswith("http://miniwob.failforge/") for u in urls)
    assert versions == {CACHE_VERSION}


@pytest.mark.timeout(60)  # a miss must fail fast, not hang
def test_replay_with_an_empty_cache_is_a_cache_miss_naming_the_url(seed: Trajectory, tmp_path) -> None:
    config = {**seed.environment.config, "cache_dir": str(tmp_path / "empty")}
    empty = seed.model_copy(update={"environment": seed.environment.model_copy(update={"config": config})})
    with pytest.raises(CacheMiss) as info:
        replay(empty)
    assert "http://miniwob.failforge/miniwob/click-link.html" in str(info.value)
    assert "cache_mode=replay" in str(info.value)
    assert info.value.step == 0


def _replaying_log(trajectory_id: str, steps: int) -> RunLog:
    """A RunLog that is replaying (expects `steps` steps), with the task step already appended."""
    expected = [Step(index=0, kind="task", agent="user", role="user", content="x")]
    expected += [
        Step(index=i, kind="tool", agent="environment", role="tool", content="?", tool_name="goto")
        for i in range(1, steps)
    ]
    log = RunLog(
        trajectory_id=trajectory_id, expected=addressed(expected), plan=Plan.replay(steps)
    )  # as a RunLog writes them
    log.append(expected[0])
    return log


@pytest.mark.timeout(60)  # a miss must fail fast, not hang
def test_cache_miss_inside_a_replayed_tool_step_names_the_url_and_the_step(seed: Trajectory, cache_dir: str) -> None:
    with MiniWoBEpisode("click-link", 1, cache_dir=cache_dir, cache_mode="replay") as episode:
        toolbox = episode.toolbox(_replaying_log("miss-test", 3))
        with pytest.raises(CacheMiss) as info:
            toolbox.call("goto", '{"url": "/miniwob/never-recorded.html"}', "call_0")
    miss = info.value
    assert "http://miniwob.failforge/miniwob/never-recorded.html" in str(miss)
    assert miss.step == 1 and miss.trajectory_id == "miss-test"


def test_live_steps_after_the_branch_point_fetch_and_record(seed: Trajectory, cache_dir: str) -> None:
    """cache_mode=replay is strict only while replaying; a live continuation records what it loads."""
    url = "http://miniwob.failforge/miniwob/click-button.html"
    with ToolCache(cache_dir, mode="replay") as cache:
        assert url not in {e.args["url"] for e in cache.entries(TOOL_NAME)}
    with MiniWoBEpisode("click-link", 1, cache_dir=cache_dir, cache_mode="replay") as episode:
        log = RunLog(trajectory_id="live-test")
        log.append(Step(index=0, kind="task", agent="user", role="user", content="x"))
        text = episode.toolbox(log).call("goto", '{"url": "/miniwob/click-button.html"}', "call_0")
        assert text.startswith(f"url: {url}")
    with ToolCache(cache_dir, mode="replay") as cache:
        assert url in {e.args["url"] for e in cache.entries(TOOL_NAME)}


def test_other_hosts_are_blocked_offline(cache_dir: str) -> None:
    with MiniWoBEpisode("click-link", 1, cache_dir=cache_dir) as episode:
        log = RunLog(trajectory_id="offline")
        log.append(Step(index=0, kind="task", agent="user", role="user", content="x"))
        text = episode.toolbox(log).call("goto", '{"url": "https://example.com/"}', "call_0")
        # a request the page itself makes to another host is aborted by the route handler
        fetched = episode.page.evaluate("() => fetch('https://example.com/x.js').then(() => 'loaded', () => 'blocked')")
        assert fetched == "blocked"
        assert "https://example.com/x.js" in episode.network.blocked
    assert text.startswith("Error: https://example.com/ is outside this environment")
