"""Browser crashes, kills and hangs are InfrastructureError (never drift); the next episode still works."""

from __future__ import annotations

import os
import signal

import pytest

from _required import require

require("chromium")

from failforge.environments.miniwob import MiniWoBEpisode  # noqa: E402
from failforge.errors import ConfigError, DriftError, InfrastructureError  # noqa: E402
from failforge.replay import replay  # noqa: E402
from failforge.runlog import RunLog  # noqa: E402
from failforge.seeds import oracle_seed  # noqa: E402
from failforge.trajectory import Step  # noqa: E402


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("miniwob-infra-cache"))


def _log() -> RunLog:
    log = RunLog(trajectory_id="infra")
    log.append(Step(index=0, kind="task", agent="user", role="user", content="x"))
    return log


def _first_button_bid(episode: MiniWoBEpisode) -> str:
    line = next(line for line in episode.observe().splitlines() if "button" in line)
    return line.strip().split("]")[0].lstrip("[")


def test_killed_browser_is_an_infrastructure_error(cache_dir: str) -> None:
    with MiniWoBEpisode("click-button", 1, cache_dir=cache_dir) as episode:
        bid = _first_button_bid(episode)
        pids = episode.session.own_pids()
        assert pids, "the session must know its own Chromium processes"
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        with pytest.raises(InfrastructureError) as info:
            episode.toolbox(_log()).call("click", f'{{"bid": "{bid}"}}', "call_0")
        assert not isinstance(info.value, DriftError)
        assert "browser" in str(info.value)
    # the dead browser was dropped: a new episode launches a fresh one
    with MiniWoBEpisode("click-button", 1, cache_dir=cache_dir) as episode:
        assert episode.observe().startswith("url: http://miniwob.failforge/")


def test_crashed_page_is_an_infrastructure_error(cache_dir: str) -> None:
    with MiniWoBEpisode("click-button", 1, cache_dir=cache_dir) as episode:
        bid = _first_button_bid(episode)
        from playwright.sync_api import Error as PlaywrightError

        with pytest.raises(PlaywrightError):
            episode.page.goto("chrome://crash", timeout=10_000)
        with pytest.raises(InfrastructureError) as info:
            episode.toolbox(_log()).call("click", f'{{"bid": "{bid}"}}', "call_0")
        assert "crash" in str(info.value) or "gone" in str(info.value)


def test_a_hung_page_is_stopped_by_the_watchdog_and_reported_as_infrastructure(cache_dir: str) -> None:
    seed = oracle_seed("miniwob", "click-button", {"cache_dir": cache_dir})
    config = {
        **seed.environment.config,
        "operation_timeout_s": 3,
        "dom_faults": [{"after_action": 0, "script": "while (true) {}"}],
    }
    hung = seed.model_copy(update={"environment": seed.environment.model_copy(update={"config": config})})
    report = replay(hung, raise_on_drift=False)
    assert report.drift is None
    assert report.infrastructure is not None and "did not answer within 3s" in report.infrastructure
    with pytest.raises(InfrastructureError):
        replay(hung)
    assert replay(seed).identical  # and the next run is healthy again


def test_missing_chromium_is_a_config_error_with_the_fix(cache_dir: str) -> None:
    with pytest.raises(ConfigError) as info:
        MiniWoBEpisode("click-button", 1, cache_dir=cache_dir, chromium="/nonexistent/chromium")
    assert "install_browser.sh" in str(info.value)


def test_unknown_task_is_a_config_error(cache_dir: str) -> None:
    with pytest.raises(ConfigError) as info:
        MiniWoBEpisode("click-buton", 1, cache_dir=cache_dir)
    assert "no task 'click-buton'" in str(info.value)
