"""One plugin mechanism for everything failforge can be extended with.

Environments, harnesses, gold kinds, filters, exporters, importers, sandbox backends and executors are each kept
in a :class:`Registry`. There is one way in: the registry's decorator, applied where the plugin is
defined::

    from failforge.environments import Environment
    from failforge.plugins import environments

    @environments.register("toy")
    class ToyEnvironment(Environment): ...

Environments, harnesses and gold kinds derive from their kind's base class (``base``: the contract, each optional
part with its default); the decorator refuses a class that does not, with a one-line error naming it.

Registries fill themselves lazily on first lookup, from two places:

- failforge's own plugin modules (``builtin_modules``), imported by name. They must be cheap to
  import: heavy dependencies (AgentDojo, Playwright, Docker) are imported inside the functions that
  need them, so listing the CLI's choices never loads a benchmark.
- Python entry points of the registry's group (``failforge.environments``, ``failforge.harnesses``,
  ...). A third-party package declares ``[project.entry-points."failforge.environments"] toy =
  "toy_pkg.env"``; loading the entry point imports that module, whose decorator registers the plugin.
  A plugin module that fails to import is kept as a :class:`BrokenPlugin` (``failforge doctor`` lists
  it, looking its name up raises the import error) so one broken package never breaks the others.

Registries are configuration, not state: nothing is registered at run time other than by importing
plugin modules, and every output records the plugins it used (name plus ``requires`` versions).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from failforge.errors import ConfigError

T = TypeVar("T")


@dataclass(frozen=True)
class PluginInfo(Generic[T]):
    """A registered plugin: the object plus what the CLI, the doctor and the manifest need to say about it."""

    name: str
    obj: T
    kind: str
    description: str = ""
    aliases: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    """Distributions this plugin runs on; their versions go into every manifest that uses it."""
    module: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BrokenPlugin:
    """A plugin module that could not be imported (an entry point of a broken or half-installed package)."""

    source: str
    error: str


class Registry(Generic[T]):
    """Named plugins of one kind, registered by decorator, discovered from builtin modules and entry points."""

    def __init__(
        self, kind: str, *, group: str, builtin_modules: tuple[str, ...] = (), base: str | None = None
    ) -> None:
        self.kind = kind
        self.group = group
        self.builtin_modules = builtin_modules
        #: ``"module:Class"``: the base class every plugin of this kind derives from (its contract, with the
        #: defaults of every optional part), or None for kinds without one. Imported when a plugin registers.
        self.base = base
        self._plugins: dict[str, PluginInfo[T]] = {}
        self._aliases: dict[str, str] = {}
        self._broken: list[BrokenPlugin] = []
        self._loaded = False
        self._loading = False
        self._lock = threading.RLock()

    def register(
        self,
        name: str,
        *,
        description: str = "",
        aliases: tuple[str, ...] = (),
        requires: tuple[str, ...] = (),
        **meta: Any,
    ) -> Callable[[T], T]:
        """Decorator: register the decorated class or function under ``name`` (and ``aliases``)."""

        def decorate(obj: T) -> T:
            self._check_base(name, obj)
            self.add(
                PluginInfo(
                    name=name,
                    obj=obj,
                    kind=self.kind,
                    description=description or _first_line(obj),
                    aliases=tuple(aliases),
                    requires=tuple(requires),
                    module=getattr(obj, "__module__", ""),
                    meta=dict(meta),
                )
            )
            return obj

        return decorate

    def _check_base(self, name: str, obj: object) -> None:
        """Refuse a plugin that does not derive from this kind's base class, naming the class and the base."""
        if self.base is None:
            return
        module, _, attr = self.base.partition(":")
        base = getattr(importlib.import_module(module), attr)
        if not (isinstance(obj, type) and issubclass(obj, base)):
            what = f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__name__)}"
            public = f"{module.replace('._base', '')}.{attr}"
            raise ConfigError(
                f"{self.kind} {name!r} ({what}) must be a subclass of {public}: derive from it (its optional parts have"
                " defaults)"
            )

    def add(self, info: PluginInfo[T]) -> None:
        with self._lock:
            for key in (info.name, *info.aliases):
                owner = self._aliases.get(key)
                if owner is not None and self._plugins[owner].module != info.module:
                    raise ConfigError(
                        f"{self.kind} {key!r} is registered twice: by {self._plugins[owner].module} and by"
                        f" {info.module}; rename one of them"
                    )
            self._plugins[info.name] = info
            for key in (info.name, *info.aliases):
                self._aliases[key] = info.name

    # --- discovery -------------------------------------------------------------------------------

    def load(self) -> None:
        """Import builtin plugin modules and entry points once (thread-safe, re-entrant)."""
        if self._loaded:
            return
        with self._lock:
            if self._loaded or self._loading:
                return
            self._loading = True
            try:
                for module in self.builtin_modules:
                    importlib.import_module(module)  # a broken builtin is a bug of failforge: let it raise
                for ep in entry_points(group=self.group):
                    try:
                        ep.load()
                    except Exception as exc:  # a third-party package must not break failforge
                        self._broken.append(BrokenPlugin(f"{ep.name} = {ep.value}", f"{type(exc).__name__}: {exc}"))
                self._loaded = True
            finally:
                self._loading = False

    # --- lookup ----------------------------------------------------------------------------------

    def info(self, name: str) -> PluginInfo[T]:
        self.load()
        key = self._aliases.get(name)
        if key is None:
            broken = [b for b in self._broken if b.source.split(" =", 1)[0] == name]
            if broken:
                raise ConfigError(
                    f"{self.kind} {name!r} comes from a plugin that failed to load ({broken[0].source}):"
                    f" {broken[0].error}"
                )
            raise ConfigError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names()) or 'none'}")
        return self._plugins[key]

    def get(self, name: str) -> T:
        return self.info(name).obj

    def canonical(self, name: str) -> str:
        """The registered name behind ``name`` (which may be an alias)."""
        return self.info(name).name

    def checked(self, name: str) -> str:
        """:meth:`canonical`, raising ``ValueError`` instead: for pydantic field validators, which report a
        ValueError with the field it came from (a ConfigError would escape them as a traceback)."""
        try:
            return self.canonical(name)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None

    def names(self, *, aliases: bool = False) -> list[str]:
        self.load()
        return sorted(self._aliases if aliases else self._plugins)

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._aliases

    def __iter__(self) -> Iterator[PluginInfo[T]]:
        self.load()
        return iter([self._plugins[n] for n in sorted(self._plugins)])

    @property
    def broken(self) -> list[BrokenPlugin]:
        self.load()
        return list(self._broken)


def _first_line(obj: object) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip()
    return doc.splitlines()[0] if doc else ""


environments: Registry[Any] = Registry(
    "environment",
    group="failforge.environments",
    builtin_modules=(
        "failforge.environments.agentdojo",
        "failforge.environments.miniwob",
        "failforge.environments.humaneval",
        "failforge.environments.textworld_env",
        "failforge.environments.scienceworld_env",
        "failforge.environments.tau2",
        "failforge.environments.bfcl",
        "failforge.environments.dabench",
    ),
    base="failforge.environments._base:Environment",
)
harnesses: Registry[Any] = Registry(
    "harness",
    group="failforge.harnesses",
    builtin_modules=(
        "failforge.harnesses.tool_calling",
        "failforge.harnesses.miniwob_vision",
        "failforge.harnesses.agentdojo_pipeline",
        "failforge.harnesses.orchestrator_workers",
        "failforge.harnesses.conversation",
        "failforge.harnesses.plan_execute_verify",
        "failforge.harnesses.smolagents_team",
        "failforge.harnesses.smolagents_code",
        "failforge.harnesses.openai_agents_team",
        "failforge.harnesses.langgraph_team",
        "failforge.harnesses.autogen_team",
        "failforge.harnesses.magentic_one_team",
        "failforge.harnesses.agent_framework_team",
        "failforge.harnesses.external",
        "failforge.harnesses.multi_turn",
    ),
    base="failforge.harnesses._base:Harness",
)
filters: Registry[Any] = Registry(
    "filter",
    group="failforge.filters",
    builtin_modules=(
        "failforge.filters.evaluator_failure",
        "failforge.filters.note_leak",
        "failforge.filters.gold_exposure",
        "failforge.filters.differs",
        "failforge.filters.well_formed",
        "failforge.filters.mode_conformance",
        "failforge.filters.tell",
        "failforge.filters.decisiveness",
        "failforge.environments.agentdojo.gold",
    ),
)
gold_kinds: Registry[Any] = Registry(
    "gold kind",
    group="failforge.gold_kinds",
    builtin_modules=("failforge.injection._action", "failforge.environments.agentdojo.gold"),
    base="failforge.gold._kind:GoldKind",
)
exporters: Registry[Any] = Registry(
    "exporter",
    group="failforge.exporters",
    builtin_modules=(
        "failforge.exporters.whowhen_pro",
        "failforge.exporters.whowhen",
        "failforge.exporters.tracertraj",
        "failforge.exporters.trajectory_attribution",
        "failforge.exporters.otel",
    ),
)
importers: Registry[Any] = Registry(
    "importer",
    group="failforge.importers",
    builtin_modules=(
        "failforge.attribution.importers.whowhen",
        "failforge.attribution.importers.whowhen_pro",
        "failforge.attribution.importers.tracertraj",
        "failforge.attribution.importers.failforge_gold",
        "failforge.attribution.importers.trajectory_attribution",
    ),
)
sandboxes: Registry[Any] = Registry(
    "sandbox backend",
    group="failforge.sandboxes",
    builtin_modules=("failforge.environments.sandbox._docker", "failforge.environments.sandbox._local"),
)
executors: Registry[Any] = Registry(
    "executor", group="failforge.executors", builtin_modules=("failforge.jobs._executors",)
)

REGISTRIES: dict[str, Registry[Any]] = {
    "environments": environments,
    "harnesses": harnesses,
    "filters": filters,
    "gold_kinds": gold_kinds,
    "exporters": exporters,
    "importers": importers,
    "sandboxes": sandboxes,
    "executors": executors,
}


def plugin_versions(infos: list[PluginInfo[Any]]) -> dict[str, str]:
    """Versions of the distributions the given plugins run on (for manifests and provenance)."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str] = {}
    for info in infos:
        for dist in info.requires:
            try:
                out[dist] = version(dist)
            except PackageNotFoundError:
                out[dist] = "not installed"
    return out


__all__ = [
    "REGISTRIES",
    "BrokenPlugin",
    "PluginInfo",
    "Registry",
    "environments",
    "executors",
    "exporters",
    "filters",
    "gold_kinds",
    "harnesses",
    "importers",
    "plugin_versions",
    "sandboxes",
]
