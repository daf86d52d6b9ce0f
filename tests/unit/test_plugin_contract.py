"""Environments and harnesses are subclasses of their contract, and every optional part has its documented default.

Failforge calls each optional part of an environment or a harness unconditionally; a plugin that says
only what it must gets the base class's defaults, and a class that does not derive from the base is
refused at registration with a one-line error naming it (for an entry point: listed as a plugin that
failed to load).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from failforge.environments import Environment, NoOptions
from failforge.errors import ConfigError, EnvironmentDrift
from failforge.harnesses import Harness, harness_roster
from failforge.plugins import Registry, environments, harnesses
from failforge.seeds import harness_for, scripted_team
from failforge.trajectory import ComponentSpec

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "plugins"


class _Bare(Environment):
    """An environment that says only what it must."""

    name = "bare"

    def tasks(self, options: BaseModel) -> list[str]:
        return ["t"]

    def spec(self, task_id: str, options: BaseModel) -> ComponentSpec:
        return ComponentSpec(name=self.name, config={"task_id": task_id})

    def open(self, spec: ComponentSpec) -> Any:
        raise NotImplementedError("not opened in these tests")


class _LoopConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    steps: int = 1


class _Loop(Harness):
    """A harness that says only what it must."""

    name = "bare.loop"
    Config = _LoopConfig

    def run(self, client: Any, model: str, instruction: str, toolbox: Any) -> str | None:
        return "done"


def test_every_built_in_environment_and_harness_derives_from_its_base() -> None:
    assert environments.names() and harnesses.names()
    for info in environments:
        assert issubclass(info.obj, Environment), info.name
    for info in harnesses:
        assert issubclass(info.obj, Harness), info.name
    team = {info.name for info in harnesses if info.obj.splits_tools}
    assert {
        "orchestrator-workers",
        "plan-execute-verify",
        "smolagents",
        "openai-agents",
        "langgraph",
        "autogen",
    } <= team
    assert not team & {"failforge.tool_calling", "agentdojo.pipeline", "external"}


def test_an_environment_that_says_only_what_it_must_gets_the_documented_defaults() -> None:
    env = _Bare()
    spec = env.spec("t", NoOptions())
    assert env.drift_error is EnvironmentDrift and env.Options is NoOptions
    assert env.oracle(spec) is None and env.ground_truth(spec) is None and env.tool_domains(spec) is None
    assert env.default_harness(spec) == ComponentSpec(name="failforge.tool_calling", config={})
    assert env.stored_spec(spec) is spec
    assert (
        env.seed_name(spec)
        == env.seed_name(ComponentSpec(name="bare", config={"task_id": "t"}))
        != env.seed_name(env.spec("u", NoOptions()))
    )
    assert env.seed_name(spec).startswith("bare-") and env.seed_name(spec).endswith("-oracle")
    assert env.doctor()[0] is True
    with pytest.raises(ValueError):  # NoOptions takes none
        NoOptions.model_validate({"suite": "x"})


def test_a_harness_that_says_only_what_it_must_gets_the_documented_defaults() -> None:
    loop = _Loop()
    assert loop.config == _LoopConfig() and _Loop(_LoopConfig(steps=3)).config.steps == 3
    assert loop.roster() is None and harness_roster(loop) is None
    assert loop.agent_resolver() is None
    assert loop.label == "bare.loop" and loop.stats is None and loop.splits_tools is False
    assert (
        scripted_team(loop, "toy-not-consulted", ComponentSpec(name="x")) is None
    )  # the environment's oracle plays a single agent
    with pytest.raises(ConfigError, match="runs a single agent"):
        _Loop.for_environment({"d": ["tool"]})
    with pytest.raises(ConfigError, match="runs a single agent"):
        loop.scripted_oracle([], "final")


def test_a_team_harness_in_an_environment_without_a_tool_split_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("failforge.seeds.environment", lambda name: _Bare())
    spec = ComponentSpec(name="bare", config={"task_id": "t"})
    with pytest.raises(
        ConfigError,
        match=(
            r"^harness 'orchestrator-workers' splits the tools among its agents, but environment 'bare' does not"
            r" say how"
        ),
    ):
        harness_for("orchestrator-workers", spec)
    team = harnesses.get("orchestrator-workers").for_environment({"d": ["tool"]})
    with pytest.raises(ConfigError, match=r"environment 'bare' has no fixed oracle sequence \(ground_truth\)"):
        scripted_team(team, "bare", spec)
    assert harness_for(None, spec).name == "failforge.tool_calling"  # the default harness needs no split


def test_the_registry_refuses_a_class_that_does_not_derive_from_its_base() -> None:
    registry: Registry[Any] = Registry(
        "environment", group="failforge.tests.none", base="failforge.environments._base:Environment"
    )

    class Duck:  # the duck-typed contract of earlier versions
        name = "duck"

    with pytest.raises(
        ConfigError, match=r"^environment 'duck' \(.*Duck\) must be a subclass of failforge.environments.Environment"
    ):
        registry.register("duck")(Duck)
    assert "duck" not in registry
    registry.register("bare")(_Bare)
    assert registry.get("bare") is _Bare


def test_an_entry_point_of_a_duck_typed_harness_is_listed_as_broken_with_the_reason(tmp_path: Path) -> None:
    source = (FIXTURES / "toy_harness.py").read_text()
    duck = source.replace("class ToyLoop(Harness):", "class ToyLoop:").replace("    config: ToyLoopConfig\n", "")
    assert duck != source
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "duck_harness.py").write_text(duck)
    dist = tmp_path / "site" / "duck-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: duck\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[failforge.harnesses]\ntoy.loop = duck_harness\n")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(pkg), os.environ.get("PYTHONPATH", "")]),
        "COLUMNS": "300",
    }
    listed = subprocess.run(
        [sys.executable, "-m", "failforge", "plugins"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    text = " ".join(listed.stdout.split())
    assert "failed to load" in text and "must be a subclass of failforge.harnesses.Harness" in text, listed.stdout
