"""TextWorld games (``textworld`` 1.7) as a failforge environment: commands and observations are the steps.

Games are not shipped: each is generated offline by ``tw-make`` from a named recipe (tw-simple or
tw-cooking at a fixed difficulty) and a seed, and cached by (recipe, seed) under the cache directory
(``~/.cache/failforge/textworld``, or ``$FAILFORGE_TEXTWORLD_CACHE``, or the ``cache_dir`` option).
The spec records the recipe, the seed, the ``tw-make`` arguments and the sha256 of the compiled game
with its Z-machine serial number (the compile date, header bytes 18-23) masked: a file regenerated on
another day is the same game, a file that differs otherwise is a drift that names the file.

The agent has one tool, ``command(text)``; its observation is the game's feedback. The state
fingerprint is what TextWorld exposes deterministically — the world's facts, the player's location
(from the facts), inventory, score, moves, won/lost — one part each, so a drift names what changed.
A command the game does not understand is still the agent's action: it is played, recorded and
evaluated like any other. The evaluator is the game's own: won (and score / max score).
The oracle replays the game's walkthrough (``EnvInfos(extras=["walkthrough"])``).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from failforge.environments._base import (
    Environment,
    Fingerprint,
    ToolResult,
    fingerprint_of,
    observe_tool_call,
    parse_tool_arguments,
)
from failforge.errors import ConfigError, EnvironmentDrift
from failforge.plugins import environments
from failforge.runlog import RunLog
from failforge.trajectory import ComponentSpec, Outcome, Step, Task, Trajectory

if TYPE_CHECKING:
    from failforge.llm import Responder

NORMALISER_VERSION = "textworld-state/1"
INSTALL_COMMAND = "bash scripts/benchmarks/install_textworld.sh"
TOOL_NAME = "command"
#: Seconds one ``tw-make`` may take (6-11 s measured; much more on a loaded machine).
GENERATE_TIMEOUT = 600.0

#: recipe name -> tw-make arguments (without --seed/--output). Difficulty grows within each family.
RECIPES: dict[str, tuple[str, ...]] = {
    "simple-dense": ("tw-simple", "--rewards", "dense", "--goal", "detailed"),
    "simple-balanced": ("tw-simple", "--rewards", "balanced", "--goal", "detailed"),
    "simple-sparse": ("tw-simple", "--rewards", "sparse", "--goal", "brief"),
    "cooking-1": ("tw-cooking", "--recipe", "1", "--take", "1", "--go", "1"),
    "cooking-2": ("tw-cooking", "--recipe", "2", "--take", "2", "--go", "6", "--open", "--cut"),
    "cooking-3": ("tw-cooking", "--recipe", "3", "--take", "3", "--go", "9", "--open", "--cook", "--cut"),
}
#: Seeds 1..DEFAULT_SEEDS of every recipe make the default game set (6 x 10 = 60 games).
DEFAULT_SEEDS = 10

INSTRUCTION = (
    "You are playing a text adventure game. Send one game command at a time with the `command` tool "
    "(e.g. 'go east', 'take old key', 'open wooden door') and read the game's answer. When the game is "
    "won, reply with a short final message.\n\n{intro}"
)

_TOOL_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": "Send one command to the text game and get the game's feedback.",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "the command, e.g. 'go north' or 'take apple'"}},
            "required": ["text"],
            "additionalProperties": False,
        },
    },
}


class TextWorldDrift(EnvironmentDrift):
    """A TextWorld game (its file, or its state after a command) differs from the recording."""

    kind = "textworld"


def textworld_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("textworld")
    except PackageNotFoundError as exc:
        raise ConfigError(f"TextWorld is not installed: {INSTALL_COMMAND}") from exc


def default_cache_dir() -> Path:
    return Path(os.environ.get("FAILFORGE_TEXTWORLD_CACHE") or Path.home() / ".cache" / "failforge" / "textworld")


def parse_task_id(task_id: str) -> tuple[str, int]:
    """``recipe/seed`` (e.g. ``cooking-2/7``) as (recipe, seed); ConfigError for anything else."""
    recipe, sep, seed = task_id.partition("/")
    if not sep or recipe not in RECIPES or not seed.isdigit():
        raise ConfigError(
            f"TextWorld has no game {task_id!r}; ids are RECIPE/SEED with RECIPE one of {', '.join(RECIPES)} (e.g."
            " cooking-2/7)"
        )
    return recipe, int(seed)


def game_path(cache_dir: Path, recipe: str, seed: int) -> Path:
    return cache_dir / recipe / f"seed-{seed}" / "game.z8"


def game_sha256(path: Path) -> str:
    """sha256 of a compiled game with its serial number (the compile date, bytes 18-23) masked."""
    data = bytearray(path.read_bytes())
    data[18:24] = b"000000"
    return hashlib.sha256(bytes(data)).hexdigest()


def tw_make() -> str:
    """The ``tw-make`` of the Python running failforge (its scripts directory), else the one on PATH."""
    beside = Path(sys.executable).parent / "tw-make"
    return str(beside) if beside.exists() else "tw-make"


_generate_lock = threading.Lock()


def generate_game(cache_dir: Path, recipe: str, seed: int) -> Path:
    """The cached game of (recipe, seed), generated by ``tw-make`` on first use (written aside, then moved in place)."""
    path = game_path(cache_dir, recipe, seed)
    if path.exists():
        return path
    with _generate_lock:
        if path.exists():
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / f".tmp-{os.getpid()}-{threading.get_ident()}"
        tmp.mkdir(exist_ok=True)
        argv = [tw_make(), *RECIPES[recipe], "--seed", str(seed), "--output", str(tmp / "game.z8"), "--silent", "-f"]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=GENERATE_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ConfigError(
                f"TextWorld game {path} is missing and tw-make could not make it ({exc}): {INSTALL_COMMAND}"
            ) from exc
        if done.returncode != 0 or not (tmp / "game.z8").exists():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [f"exit {done.returncode}"]
            raise ConfigError(f"TextWorld game {path} is missing and tw-make failed ({tail[0]}): {INSTALL_COMMAND}")
        for name in ("game.z8", "game.json", "game.ni"):
            if (tmp / name).exists():
                os.replace(tmp / name, path.parent / name)
        for left in tmp.iterdir():
            left.unlink()
        tmp.rmdir()
        return path


def _request_infos() -> Any:
    import textworld

    return textworld.EnvInfos(
        facts=True,
        inventory=True,
        score=True,
        moves=True,
        won=True,
        lost=True,
        max_score=True,
        objective=True,
        description=True,
        extras=["walkthrough"],
    )


def feedback(text: str) -> str:
    """The game's answer without its input prompt and the padded status line after it (room, score)."""
    return text.rsplit("\n>", 1)[0].strip() if "\n>" in text else text.strip()


def _location(facts: list[str]) -> str:
    """The player's room, from the ``at(P, room: r)`` fact."""
    for fact in facts:
        if fact.startswith("at(P, "):
            return fact[len("at(P, ") :].rsplit(":", 1)[0]
    return ""


#: TextWorld entity types grouped by what a command can do with them: open/close (container, door),
#: take/drop/eat (object, food, key), put on / insert into (supporter, container).
KINDS: dict[str, str] = {
    "c": "openable",
    "d": "openable",
    "o": "portable",
    "f": "portable",
    "k": "portable",
    "s": "support",
}


@functools.lru_cache(maxsize=128)
def game_entities(path: Path, sha256: str = "") -> dict[str, str]:
    """Name -> kind (:data:`KINDS`) of the game's things, from its ``.json`` (rooms and the player left out):
    what a wrong-object command may name instead. Cached per (file, its hash): every attempt opens the game."""
    import textworld

    game = textworld.Game.load(str(path.with_suffix(".json")))
    return {str(info.name): KINDS[info.type] for info in game.infos.values() if info.name and info.type in KINDS}


def _named(text: str, entities: dict[str, str]) -> list[tuple[int, str]]:
    """The entities a command names, as (position, name), longest names first so 'old key' beats 'key'."""
    found: list[tuple[int, str]] = []
    taken: set[int] = set()
    low = text.casefold()
    for name in sorted(entities, key=len, reverse=True):
        start = low.find(name.casefold())
        while start >= 0:
            span = set(range(start, start + len(name)))
            boundary = (start == 0 or not low[start - 1].isalnum()) and (
                start + len(name) == len(low) or not low[start + len(name)].isalnum()
            )
            if boundary and not span & taken:
                found.append((start, name))
                taken |= span
                break
            start = low.find(name.casefold(), start + 1)
    return sorted(found)


def shown(name: str, seen: str) -> bool:
    """The game's text names ``name`` as a whole phrase ('key' is not shown by 'keycard')."""
    return re.search(rf"(?<![\w]){re.escape(name.casefold())}(?![\w])", seen.casefold()) is not None


def wrong_object(command: str, seen: str, entities: dict[str, str], rng: Any) -> tuple[str, dict[str, Any]] | None:
    """``command`` with one object swapped for another thing of the same kind that the game has shown
    (in the intro or an observation so far): 'open antique trunk' -> 'open chest drawer'. None when the
    command names no entity or no other thing of its kind has been shown."""
    for start, name in _named(command, entities):
        others = sorted(
            n
            for n, kind in entities.items()
            if kind == entities[name] and n != name and shown(n, seen) and not shown(n, command)
        )
        if others:
            other = others[rng.randrange(len(others))]
            return command[:start] + other + command[start + len(name) :], {
                "object": name,
                "instead": other,
                "kind": entities[name],
            }
    return None


def game_text(instruction: str, steps: list[Step]) -> str:
    """What the game has shown: the intro (the instruction after its fixed preamble, whose example commands
    name things of no game) and every observation in ``steps``."""
    intro = instruction.split("\n\n", 1)[-1]
    return "\n".join([intro] + [s.content or "" for s in steps if s.kind == "tool"])


def swapped_object(original: str, changed: str, seen: str, entities: dict[str, str]) -> tuple[bool, str]:
    """Whether ``changed`` is ``original`` with one named thing replaced by another of the same kind that
    the game had shown: the rule that verifies a TextWorld A.2 (a wrong object, not a nonsense token)."""
    before, after = _named(original, entities), _named(changed, entities)
    gone = [n for _, n in before if n not in {m for _, m in after}]
    new = [n for _, n in after if n not in {m for _, m in before}]
    if len(gone) != 1 or len(new) != 1:
        return False, f"{changed!r} does not swap exactly one thing named in {original!r} for another"
    if entities[gone[0]] != entities[new[0]]:
        return (
            False,
            f"{new[0]!r} ({entities[new[0]]}) is not the same kind of thing as {gone[0]!r} ({entities[gone[0]]})",
        )
    if not shown(new[0], seen):
        return False, f"{new[0]!r} had not been shown to the agent"
    if changed.casefold().replace(new[0].casefold(), gone[0].casefold()) != original.casefold():
        return False, f"{changed!r} changes more than the object of {original!r}"
    return (
        True,
        (
            f"{original!r} -> {changed!r}: {new[0]!r}, another {entities[new[0]]} thing the game had shown, instead of"
            f" {gone[0]!r}"
        ),
    )


class TextWorldToolbox:
    """The one ``command`` tool of an episode, through the stateful tool boundary."""

    def __init__(self, episode: TextWorldEpisode, log: RunLog) -> None:
        self.episode = episode
        self.log = log

    def schemas(self) -> list[dict[str, Any]]:
        return [_TOOL_SCHEMA]

    def call(self, name: str, arguments: str, call_id: str | None) -> str:
        args = parse_tool_arguments(arguments)

        def run() -> ToolResult:
            if name != TOOL_NAME:
                return ToolResult(
                    content="", error=f"ValueError: unknown tool {name!r}; the only tool is {TOOL_NAME!r}"
                )
            if args is None:
                return ToolResult(
                    content="", error=f"ValueError: tool arguments are not a JSON object: {arguments[:200]!r}"
                )
            text = args.get("text")
            if not isinstance(text, str):
                return ToolResult(content="", error="ValueError: argument 'text' must be a string")
            return ToolResult(content=self.episode.play(text))

        step = observe_tool_call(
            self.log,
            name=name,
            arguments=args,
            call_id=call_id,
            run=run,
            fingerprint=self.episode.fingerprint,
            drift=TextWorldDrift,
        )
        return (step.content or "") if step.error is None else f"Error: {step.error}"


class TextWorldEpisode:
    """One game, started fresh from its cached file (after checking it is the recorded file)."""

    def __init__(self, recipe: str, seed: int, cache_dir: Path, expected_sha256: str | None) -> None:
        import textworld

        self.recipe = recipe
        self.seed = seed
        self.path = generate_game(cache_dir, recipe, seed)
        actual = game_sha256(self.path)
        if expected_sha256 is not None and actual != expected_sha256:
            raise TextWorldDrift(
                f"TextWorld game file {self.path} is not the recorded game ({recipe}/{seed})",
                expected=expected_sha256,
                actual=actual,
                diff=f"  game sha256: recorded {expected_sha256} found {actual}",
            )
        self.sha256 = actual
        self.env = textworld.start(str(self.path), request_infos=_request_infos())
        self.state = self.env.reset()
        self.intro = feedback(str(self.state["feedback"]))
        self.walkthrough = [str(c) for c in self.state["extra.walkthrough"]]
        self.max_score = int(self.state["max_score"])
        self.done = False
        self.entities = dict(game_entities(self.path, self.sha256))

    def __enter__(self) -> TextWorldEpisode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None

    @property
    def task_id(self) -> str:
        return f"{self.recipe}/{self.seed}"

    def play(self, text: str) -> str:
        """One command, as the game answers it. After the game has ended the game is not asked (it only
        repeats its restart prompt): the agent is told so and nothing changes."""
        if self.done:
            return "The game is over."
        self.state, _, self.done = self.env.step(text)
        return feedback(str(self.state["feedback"]))

    def instruction(self) -> str:
        return INSTRUCTION.format(intro=self.intro.strip())

    def task_record(self) -> Task:
        return Task(
            benchmark="textworld",
            suite=self.recipe,
            task_id=self.task_id,
            instruction=self.instruction(),
            gold_answer=None,
            metadata={
                "seed": str(self.seed),
                "walkthrough_length": str(len(self.walkthrough)),
                "max_score": str(self.max_score),
                "entities": self.entities,
            },
        )

    def toolbox(self, log: RunLog) -> TextWorldToolbox:
        return TextWorldToolbox(self, log)

    def fingerprint(self) -> Fingerprint:
        facts = sorted(str(f) for f in self.state["facts"])
        return fingerprint_of(
            {
                "facts": facts,
                "location": _location(facts),
                "inventory": str(self.state["inventory"]),
                "score": int(self.state["score"]),
                "moves": int(self.state["moves"]),
                "ended": {"won": bool(self.state["won"]), "lost": bool(self.state["lost"])},
            }
        )

    def evaluate(self, final_output: str | None, steps: list[Step]) -> Outcome:
        """The game's own verdict: won. The score is the game's score over its maximum."""
        won, score = bool(self.state["won"]), int(self.state["score"])
        return Outcome(
            success=won,
            score=score / self.max_score if self.max_score else float(won),
            evaluator="textworld.won",
            details={
                "won": won,
                "lost": bool(self.state["lost"]),
                "score": score,
                "max_score": self.max_score,
                "moves": int(self.state["moves"]),
                "game": self.task_id,
            },
        )


class TextWorldOptions(BaseModel):
    """What ``failforge seeds textworld`` / ``record --env textworld`` accept."""

    model_config = ConfigDict(extra="forbid")

    recipe: list[str] = Field(default_factory=list, description=f"recipe(s): {', '.join(RECIPES)} (default: all)")
    seeds: int = Field(default=DEFAULT_SEEDS, ge=1, description="games per recipe: seeds 1..N")
    cache_dir: str | None = Field(
        default=None, description="where generated games are cached (default ~/.cache/failforge/textworld)"
    )


def _cache(value: Any) -> Path:
    return Path(value) if value else default_cache_dir()


@environments.register(
    "textworld", requires=("textworld",), description="TextWorld games generated by tw-make (tw-simple, tw-cooking)"
)
class TextWorldEnvironment(Environment):
    """TextWorld as an environment plugin: task ids are ``recipe/seed`` (e.g. ``cooking-2/7``)."""

    name: ClassVar[str] = "textworld"
    drift_error: ClassVar[type[EnvironmentDrift]] = TextWorldDrift
    Options: ClassVar[type[BaseModel]] = TextWorldOptions

    def wrong_argument(self, trajectory: Trajectory, t: int, rng: Any) -> dict[str, Any] | str | None:
        """A text game's A.2: the command with another thing of the same kind the game has shown (another
        container to open, another object to take), not a truncated or misspelt one."""
        entities = trajectory.task.metadata.get("entities")
        calls = [c for c in trajectory.steps[t].tool_calls if isinstance((c.parsed_arguments() or {}).get("text"), str)]
        if not calls:
            return "a_t sends no game command"
        if not isinstance(entities, dict) or not entities:
            return "the seed's task has no entity list (recorded before it was kept): re-record the seed"
        call = calls[0]
        command = str((call.parsed_arguments() or {})["text"])
        made = wrong_object(command, game_text(trajectory.task.instruction, trajectory.steps[:t]), entities, rng)
        if made is None:
            return f"{command!r} names no thing of which the game has shown another of the same kind"
        changed, details = made
        return {
            "tool": call.name,
            "argument": "text",
            "original": command,
            "value": changed,
            "source": f"another {details['kind']} thing the game showed",
            **details,
        }

    def changed_argument(
        self, trajectory: Trajectory, t: int, old: dict[str, Any], new: dict[str, Any]
    ) -> tuple[bool, str] | None:
        """A wrong object, not any changed text."""
        entities = trajectory.task.metadata.get("entities")
        if (
            not isinstance(entities, dict)
            or not isinstance(old.get("text"), str)
            or not isinstance(new.get("text"), str)
        ):
            return False, "a TextWorld A.2 needs the seed's entity list and a text command on both sides"
        return swapped_object(
            old["text"], new["text"], game_text(trajectory.task.instruction, trajectory.steps[:t]), entities
        )

    def tasks(self, options: BaseModel) -> list[str]:
        opts = TextWorldOptions.model_validate(options.model_dump())
        unknown = [r for r in opts.recipe if r not in RECIPES]
        if unknown:
            raise ConfigError(f"unknown TextWorld recipe {unknown[0]!r}; expected one of {', '.join(RECIPES)}")
        return [f"{recipe}/{seed}" for recipe in opts.recipe or list(RECIPES) for seed in range(1, opts.seeds + 1)]

    def spec(self, task_id: str, options: BaseModel) -> ComponentSpec:
        opts = TextWorldOptions.model_validate(options.model_dump())
        recipe, seed = parse_task_id(task_id)
        cache = _cache(opts.cache_dir)
        path = generate_game(cache, recipe, seed)
        config: dict[str, Any] = {
            "recipe": recipe,
            "seed": seed,
            "tw_make": list(RECIPES[recipe]),
            "game_sha256": game_sha256(path),
            "normaliser": NORMALISER_VERSION,
        }
        if opts.cache_dir:
            config["cache_dir"] = opts.cache_dir
        return ComponentSpec(name="textworld", version=textworld_version(), config=config)

    def open(self, spec: ComponentSpec) -> TextWorldEpisode:
        cfg = spec.config
        try:
            recipe, seed = parse_task_id(f"{cfg['recipe']}/{cfg['seed']}")
        except KeyError as exc:
            raise ConfigError(f"environment spec for textworld lacks {exc.args[0]!r}: {cfg}") from exc
        if list(cfg.get("tw_make", RECIPES[recipe])) != list(RECIPES[recipe]):
            raise ConfigError(
                f"textworld recipe {recipe!r} was recorded with tw-make {cfg['tw_make']}, this failforge makes it with"
                f" {list(RECIPES[recipe])}"
            )
        return TextWorldEpisode(recipe, seed, _cache(cfg.get("cache_dir")), cfg.get("game_sha256"))

    def walkthrough(self, spec: ComponentSpec) -> list[str]:
        with self.open(spec) as probe:
            return probe.walkthrough

    def oracle(self, spec: ComponentSpec) -> Responder:
        """The game's walkthrough plays the model: call k sends the k-th walkthrough command, then a final message."""
        from failforge.llm import OracleResponder, fixed_tool_calls

        calls, final = self.ground_truth(spec)
        return OracleResponder(fixed_tool_calls(calls, final), name="textworld.walkthrough")

    def ground_truth(self, spec: ComponentSpec) -> tuple[list[tuple[str, dict[str, Any]]], str]:
        return [(TOOL_NAME, {"text": c}) for c in self.walkthrough(spec)], "I have won the game."

    def default_harness(self, spec: ComponentSpec) -> ComponentSpec:
        return ComponentSpec(name="failforge.tool_calling", config={"max_model_calls": len(self.walkthrough(spec)) + 8})

    def seed_name(self, spec: ComponentSpec) -> str:
        return f"textworld-{spec.config['recipe']}-{spec.config['seed']}-oracle"

    def doctor(self) -> tuple[bool, str]:
        try:
            import textworld  # noqa: F401
        except Exception as exc:  # ImportError, or a broken install (jericho's C library)
            return False, f"TextWorld does not import ({type(exc).__name__}: {exc}): {INSTALL_COMMAND}"
        cache = default_cache_dir()
        have = sum(1 for r in RECIPES for s in range(1, DEFAULT_SEEDS + 1) if game_path(cache, r, s).exists())
        return (
            True,
            (
                f"TextWorld {textworld_version()}, {have}/{len(RECIPES) * DEFAULT_SEEDS} default games generated in"
                f" {cache} ({INSTALL_COMMAND} makes the rest)"
            ),
        )


def main(argv: list[str] | None = None) -> int:
    """``python -m failforge.environments.textworld_env [RECIPE/SEED ...]``: generate games (default: the default
    set)."""
    ids = list(argv if argv is not None else sys.argv[1:]) or TextWorldEnvironment().tasks(TextWorldOptions())
    for task_id in ids:
        recipe, seed = parse_task_id(task_id)
        print(generate_game(default_cache_dir(), recipe, seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
