"""One MiniWoB++ episode as a failforge environment: page, tools through the boundary, reward.

The episode is started as miniwob's own Python environment starts one (``begin_task``): load the task
page, ``Math.seedrandom(seed)``, ``core.setDataMode(mode)``, ``core.startEpisodeReal()``, wait for
``WOB_TASK_READY``; but without Selenium, in a Playwright page whose clock, randomness, locale,
viewport and network are pinned (``_browser.py``, ``_network.py``). Virtual time moves only by
``settle_ms`` after each action, so MiniWoB's time-scaled reward and its episode timer are the same on
every replay.

Every tool call goes through :func:`failforge.environments._base.observe_tool_call` with
``drift=DomDrift``: the action runs live, the new page is read once (observation text + DOM
fingerprint, ``_dom.py``), and in replay both must equal the seed's at that step. The evaluator reads
MiniWoB's own verdict from the page (``WOB_DONE_GLOBAL``, ``WOB_RAW_REWARD_GLOBAL``, ...).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from failforge.cache import ToolCache
from failforge.environments._base import Fingerprint, ToolResult, observe_tool_call, parse_tool_arguments
from failforge.environments.miniwob._actions import ActionOutcome, Actions, parse_arguments, tool_schemas
from failforge.environments.miniwob._browser import BrowserSession, playwright_version
from failforge.environments.miniwob._config import MiniWoBConfig
from failforge.environments.miniwob._dom import DomSnapshot, EpisodeStatus, read_status, snapshot
from failforge.environments.miniwob._network import PageNetwork
from failforge.environments.miniwob._server import LoopbackServer, miniwob_html_dir, miniwob_version
from failforge.errors import ConfigError, DomDrift, DriftError, InfrastructureError
from failforge.images import ImageStore, default_image_dir
from failforge.runlog import RunLog
from failforge.trajectory import ComponentSpec, Outcome, Step, Task

ENVIRONMENT_NAME = "miniwob"
#: Separates the task utterance from the page in the instruction (oracles split on it).
PAGE_HEADER = "\n\nPage:\n"
_READY_POLL_MS = 50
_READY_MAX_POLLS = 200


def available_tasks() -> list[str]:
    """Every MiniWoB++ task the installed package ships (html/miniwob/<task>.html), sorted."""
    return sorted(p.stem for p in (miniwob_html_dir() / "miniwob").glob("*.html"))


class MiniWoBToolbox:
    """The browser tools of one episode, each call routed through the stateful tool boundary."""

    def __init__(self, episode: MiniWoBEpisode, log: RunLog) -> None:
        self.episode = episode
        self.log = log

    def schemas(self) -> list[dict[str, Any]]:
        return tool_schemas(self.episode.config.action_space)

    def screenshot_png(self) -> tuple[str, bytes]:
        """(sha256, PNG) of the page as the latest step left it (a fresh one before any action)."""
        digest = self.episode.last_image or self.episode.screenshot()
        return digest, screenshot_path(self.episode.config, digest).read_bytes()

    def call(self, name: str, arguments: str, call_id: str | None) -> str:
        parsed = parse_tool_arguments(arguments)
        index = self.log.next_index
        try:
            step = observe_tool_call(
                self.log,
                name=name,
                arguments=parsed,
                call_id=call_id,
                run=lambda: self._act(index, name, parsed, arguments),
                fingerprint=self.episode.last_fingerprint,
                drift=DomDrift,
            )
        except DriftError as exc:
            exc.locate(self.log.trajectory_id, index)
            raise
        content = step.content or ""
        return content if step.error is None else f"Error: {step.error}\n\n{content}"

    def _act(self, index: int, name: str, parsed: dict[str, Any] | None, raw: str) -> ToolResult:
        """The action, with the screenshots taken after it; replaying coordinate actions (the model saw these
        screenshots) they must be the seed's byte for byte; with bid actions they stay attachments."""
        result = self.episode.act(name, parsed, raw)
        images = tuple(self.episode.take_pending_images())
        expected = self.log.expected_step(index) if self.log.replaying(index) else None
        if expected is not None and expected.kind == "tool" and self.episode.config.action_space != "coordinate":
            images = tuple(
                expected.images
            )  # bid actions: screenshots are attachments (the DOM is checked), the seed's are kept
        elif expected is not None and expected.kind == "tool" and list(images) != list(expected.images):
            store = ImageStore()
            where = [
                str(store.locate(h) or h[:12]) for h in (*expected.images[:1], *images[:1])
            ]  # the two PNGs, to compare
            raise DomDrift(
                f"the screenshot after step {index} ({name}) is not the recorded one: the page looks different although"
                " replayed exactly" + (f" (recorded {where[0]}, now {where[1]})" if len(where) == 2 else ""),
                trajectory_id=self.log.error_id,
                step=index,
                expected=[h[:12] for h in expected.images],
                actual=[h[:12] for h in images],
            )
        return ToolResult(content=result.content, error=result.error, images=images)


class MiniWoBEpisode:
    """One MiniWoB++ task episode in a pinned headless Chromium. Use as a context manager."""

    name = ENVIRONMENT_NAME
    #: The drift type for this environment, also used for the step-0 (instruction) check.
    drift_error = DomDrift

    def __init__(
        self, task: str | None = None, seed: int = 0, *, config: MiniWoBConfig | None = None, **settings: Any
    ) -> None:
        if config is None:
            if task is None:
                raise ConfigError("MiniWoBEpisode needs a task name or a MiniWoBConfig")
            try:
                config = MiniWoBConfig(task=task, seed=seed, **settings)
            except ValidationError as exc:
                raise ConfigError(f"invalid MiniWoB settings: {exc}") from exc
        elif task is not None or settings:
            raise ConfigError("pass either config= or task/seed/settings to MiniWoBEpisode, not both")
        self.config = config
        html_dir = miniwob_html_dir()
        if not (html_dir / "miniwob" / f"{config.task}.html").is_file():
            close = [t for t in available_tasks() if config.task.split("-")[0] in t][:8]
            raise ConfigError(
                f"MiniWoB++ has no task {config.task!r}" + (f"; similar: {', '.join(close)}" if close else "")
            )
        self._log: RunLog | None = None
        self._actions_done = 0
        self._last: DomSnapshot | None = None
        self._pending_images: list[str] = []
        #: sha256 of the latest screenshot taken after an action (what a vision harness shows next).
        self.last_image: str | None = None
        self._utterance = ""
        self._initial_observation = ""
        self.server = LoopbackServer(html_dir)
        self.cache = ToolCache(config.cache_dir, mode="record") if config.cache_mode != "off" else None
        self.session = BrowserSession(config)
        self.network = PageNetwork(origin=config.origin, cache=self.cache, server=self.server, strict=self._strict)
        self.actions = Actions(self.session, origin=config.origin, action_space=config.action_space)
        try:
            self._start()
        except DriftError as exc:  # a page load missing from the cache: the run fails at its first step
            self.close()
            exc.locate(step=0)
            raise
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> MiniWoBEpisode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.session.close()
        with contextlib.suppress(Exception):
            self.server.stop()
        if self.cache is not None:
            with contextlib.suppress(Exception):
                self.cache.close()

    def _strict(self) -> bool:
        """A cache miss is an error when replaying (before the toolbox exists, the run is at step 0)."""
        if self.config.cache_mode != "replay":
            return False
        return self._log is None or self._log.replaying(self._log.next_index)

    def _start(self) -> None:
        from playwright.sync_api import Error as PlaywrightError

        cfg = self.config
        page = self.session.start()
        page.route("**/*", self.network.handle)
        with self.session.guard(f"loading {cfg.start_url}"):
            try:
                page.goto(cfg.start_url, wait_until="load")
            except PlaywrightError as exc:
                self.network.raise_pending()
                infra = self.session.infrastructure_error(exc, f"loading {cfg.start_url}")
                raise (
                    infra
                    or InfrastructureError(f"the task page {cfg.start_url} did not load: {str(exc).splitlines()[0]}")
                ) from exc
            self.network.raise_pending()
            if not page.evaluate("() => typeof core === 'object' && typeof core.startEpisodeReal === 'function'"):
                raise ConfigError(f"{cfg.start_url} is not a MiniWoB++ task page (no core.startEpisodeReal)")
            # As miniwob's SeleniumInstance.begin_task: seed, data mode, start.
            page.evaluate("(seed) => Math.seedrandom(seed)", cfg.seed)
            page.evaluate("(mode) => core.setDataMode(mode)", cfg.data_mode)
            page.evaluate("() => core.startEpisodeReal()")
            for _ in range(_READY_MAX_POLLS):
                if page.evaluate("() => typeof WOB_TASK_READY === 'undefined' || !!WOB_TASK_READY"):
                    break
                self.session.run_for(_READY_POLL_MS)
            else:
                raise InfrastructureError(
                    f"MiniWoB task {cfg.task} never set WOB_TASK_READY within {_READY_POLL_MS * _READY_MAX_POLLS}"
                    " virtual ms"
                )
            self.session.run_for(cfg.settle_ms)
            self.network.raise_pending()
            self._apply_faults(-1)
            utterance = page.evaluate("() => core.getUtterance()")
            self._last = snapshot(page)
        if isinstance(utterance, dict):
            utterance = utterance.get("utterance", "")
        self._utterance = " ".join(str(utterance).split())
        self._initial_observation = self._last.observation_text()

    # ------------------------------------------------------------------ environment protocol

    def spec_config(self) -> dict[str, Any]:
        return self.config.model_dump(mode="json")

    def spec(self) -> ComponentSpec:
        return ComponentSpec(name=ENVIRONMENT_NAME, version=miniwob_version(), config=self.spec_config())

    @property
    def utterance(self) -> str:
        return self._utterance

    def instruction(self) -> str:
        """The task utterance plus the initial page, so the first model call sees what it acts on."""
        return f"{self._utterance}{PAGE_HEADER}{self._initial_observation}"

    def task_record(self) -> Task:
        return Task(
            benchmark="miniwob",
            suite="miniwob",
            task_id=self.config.task,
            instruction=self.instruction(),
            gold_answer=None,
            metadata={
                "utterance": self._utterance,
                "seed": self.config.seed,
                "data_mode": self.config.data_mode,
                "miniwob_version": miniwob_version(),
                "playwright_version": playwright_version(),
                "chromium_version": self.session.version,
            },
        )

    def toolbox(self, log: RunLog) -> MiniWoBToolbox:
        self._log = log
        return MiniWoBToolbox(self, log)

    @property
    def page(self) -> Any:
        """The Playwright page (for tests and diagnostics; agents act only through the toolbox)."""
        return self.session.page

    # ------------------------------------------------------------------ acting and reading

    def act(self, name: str, arguments: dict[str, Any] | None, raw: str = "") -> ToolResult:
        """Run one tool call, let virtual time settle, read the page. Called inside observe_tool_call."""
        self.session.check_alive(f"running {name}")
        args = parse_arguments(name, arguments, raw, self.config.action_space)
        if isinstance(args, str):
            outcome = ActionOutcome(error=args)
        else:
            status = self.status()
            if status is not None and status.done and name != "answer":
                outcome = ActionOutcome(
                    error="the task episode is over (MiniWoB already gave its reward); reply with your final answer"
                )
            else:
                outcome = self.actions.perform(name, args)
        with self.session.guard(f"settling after {name}"):
            self.network.raise_pending()
            # A click on a link starts a navigation; read the page it lands on, once loaded.
            self.session.page.wait_for_load_state("load")
            self.session.run_for(self.config.settle_ms)
            self.network.raise_pending()
            self._apply_faults(self._actions_done)
            self._actions_done += 1
            self._last = snapshot(self.session.page)
        if self.config.screenshots or self.config.action_space == "coordinate":
            self.last_image = self.screenshot()
            self._pending_images.append(self.last_image)
        content = self._last.observation_text()
        note = outcome.note
        if outcome.hit is not None:  # the DOM's account of where a coordinate click landed (P.2's truth)
            hit = outcome.hit
            note = (
                f"{note} on [{hit.get('bid')}] {hit.get('tag')} {json.dumps(hit.get('text', ''), ensure_ascii=False)}"
                f" box={tuple(hit.get('box') or ())}"
            )
        if note:
            content = f"{note}\n{content}"
        return ToolResult(content=content, error=outcome.error)

    def observe(self) -> str:
        """A fresh reading of the page as observation text (stamps bids of new elements)."""
        with self.session.guard("reading the page"):
            self._last = snapshot(self.session.page)
        return self._last.observation_text()

    def fingerprint(self) -> Fingerprint:
        """A fresh DOM fingerprint of the page."""
        with self.session.guard("fingerprinting the page"):
            self._last = snapshot(self.session.page)
        return self._last.fingerprint()

    def last_fingerprint(self) -> Fingerprint:
        """The fingerprint of the reading :meth:`act` just took (the page has not moved since: time is paused)."""
        if self._last is None:
            return self.fingerprint()
        return self._last.fingerprint()

    def status(self) -> EpisodeStatus | None:
        with self.session.guard("reading the reward"):
            return read_status(self.session.page)

    def screenshot(self) -> str:
        """PNG of the viewport stored as <screenshot_dir>/<sha256>.png; returns the sha256."""
        with self.session.guard("taking a screenshot"):
            # CSS transitions run on the compositor's real time, not the paused clock: a screenshot the model sees
            # (coordinate actions) has them finished first, so a loaded machine cannot catch one halfway.
            still = {"animations": "disabled"} if self.config.action_space == "coordinate" else {}
            data = self.session.page.screenshot(type="png", timeout=self.config.operation_timeout_s * 1000, **still)
        digest = hashlib.sha256(data).hexdigest()
        directory = self.config.screenshot_directory()
        directory.mkdir(parents=True, exist_ok=True)
        if (
            directory != default_image_dir()
        ):  # outside the image store: also in it, so writing a seed naming it finds it
            ImageStore().put(data)
        target = directory / f"{digest}.png"
        if not target.exists():
            tmp = target.with_suffix(f".{self.session.token[:8]}.tmp")
            tmp.write_bytes(data)
            tmp.replace(target)
        return digest

    def take_pending_images(self) -> list[str]:
        images, self._pending_images = self._pending_images, []
        return images

    def _apply_faults(self, after_action: int) -> None:
        for fault in self.config.dom_faults:
            if fault.after_action == after_action:
                self.session.page.evaluate(f"() => {{ {fault.script}\n }}")

    # ------------------------------------------------------------------ evaluator

    def evaluate(self, final_output: str | None, steps: list[Step]) -> Outcome:
        """MiniWoB's own reward, read from the page: success iff the episode is done with raw reward > 0.

        ``score`` is the raw reward (MiniWoB's task verdict, in [-1, 1]); the time-scaled reward
        (which, with the pinned clock, is as reproducible as the raw one) is in ``details``.
        """
        status = self.status()
        if status is None:
            return Outcome(
                success=False,
                score=None,
                evaluator="miniwob.reward",
                details={"task": self.config.task, "error": "the page has no MiniWoB core"},
            )
        return Outcome(
            success=bool(status.done and status.raw_reward > 0),
            score=status.raw_reward if status.done else 0.0,
            evaluator="miniwob.reward",
            details={
                "task": self.config.task,
                "seed": self.config.seed,
                "done": status.done,
                "raw_reward": status.raw_reward,
                "reward": status.reward,
                "reason": status.reason,
                "answers": list(self.actions.answers),
                "final_output": (final_output or "")[:2000],
            },
        )

    def cache_keys_used(self) -> list[str]:
        return self.network.keys_used()


def open_episode(spec: Any) -> MiniWoBEpisode:
    """Registry factory: rebuild a MiniWoB++ episode from a recorded environment spec."""
    try:
        config = MiniWoBConfig.model_validate(spec.config)
    except ValidationError as exc:
        raise ConfigError(f"environment spec for miniwob is invalid: {exc}") from exc
    return MiniWoBEpisode(config=config)


def env_spec(task: str, seed: int = 0, **settings: Any) -> ComponentSpec:
    """The environment spec a trajectory records for ``task`` at episode ``seed`` (settings override defaults)."""
    try:
        config = MiniWoBConfig(task=task, seed=seed, **settings)
    except ValidationError as exc:
        raise ConfigError(f"invalid MiniWoB settings: {exc}") from exc
    return ComponentSpec(name=ENVIRONMENT_NAME, version=miniwob_version(), config=config.model_dump(mode="json"))


def screenshot_path(config: MiniWoBConfig, digest: str) -> Path:
    """Where the screenshot referenced as ``digest`` in ``Step.images`` is stored."""
    return config.screenshot_directory() / f"{digest}.png"
