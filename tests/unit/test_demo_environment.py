"""`failforge demo --environment NAME`: the environment's demo hook names the tasks, bad names exit 2."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import ClassVar, NamedTuple

import pytest
from pydantic import BaseModel

from failforge.environments._base import Environment, Episode
from failforge.environments.miniwob._plugin import BROWSER_DEMO_TASKS, MiniWoBEnvironment
from failforge.trajectory import ComponentSpec


class _Counting(Environment):
    name: ClassVar[str] = "counting"

    def tasks(self, options: BaseModel) -> list[str]:
        return [f"t{i}" for i in range(10)]

    def spec(self, task_id: str, options: BaseModel) -> ComponentSpec:
        return ComponentSpec(name=self.name, config={"task": task_id})

    def open(self, spec: ComponentSpec) -> Episode:
        raise NotImplementedError("not opened in this test")


def test_default_demo_is_the_first_six_tasks_with_default_options(tmp_path: Path) -> None:
    assert _Counting().demo(tmp_path) == (["t0", "t1", "t2", "t3", "t4", "t5"], {})


def test_default_demo_harness_keeps_the_default_harness_config() -> None:
    assert _Counting().demo_harness() == {}


def test_miniwob_demo_caches_pages_in_the_demo_folder(tmp_path: Path) -> None:
    tasks, options = MiniWoBEnvironment().demo(tmp_path)
    assert tasks == list(BROWSER_DEMO_TASKS)
    assert options == {"cache_dir": str((tmp_path / "http-cache").resolve())}


def _demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> Exited:
    """``failforge demo`` through the console entry point, in this process (its exit status and stderr)."""
    from failforge.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FAILFORGE_NO_REEXEC", "1")
    monkeypatch.setattr(sys, "argv", ["failforge", "demo", "-o", str(tmp_path / "out"), *args])
    with pytest.raises(SystemExit) as exited:
        main()
    return Exited(exited.value.code, capsys.readouterr().err)


class Exited(NamedTuple):
    returncode: int | str | None
    stderr: str


def test_unknown_environment_exits_2_naming_it(tmp_path: Path, monkeypatch, capsys) -> None:
    done = _demo(tmp_path, monkeypatch, capsys, "--environment", "nosuchworld")
    assert done.returncode == 2, done.stderr
    assert "nosuchworld" in done.stderr
    assert not (tmp_path / "out" / "nosuchworld_seeds.jsonl").exists()


def test_browser_with_another_environment_exits_2(tmp_path: Path, monkeypatch, capsys) -> None:
    done = _demo(tmp_path, monkeypatch, capsys, "--browser", "--environment", "agentdojo")
    assert done.returncode == 2, done.stderr
    assert "--browser is --environment miniwob" in done.stderr
