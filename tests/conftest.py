"""Shared fixtures: the real local model server, real AgentDojo oracle seeds, the bundled seeds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from _required import COVERAGE_SHRINKING, on_ci, require
from failforge.trajectory import Trajectory, load_jsonl

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"


@pytest.fixture(scope="session")
def local_model():
    """The embedded llama.cpp server (started once per test session, stopped at the end)."""
    from failforge.llm import LocalModelServer

    require("llama")
    with LocalModelServer() as server:
        yield server


@pytest.fixture(scope="session")
def bundled_seeds() -> list[Trajectory]:
    seeds, errors = load_jsonl(BUNDLED)
    assert not errors
    return seeds


@pytest.fixture(scope="session")
def all_oracle_seeds() -> list[Trajectory]:
    """Oracle seeds of all 97 AgentDojo v1 user tasks, recorded in this process."""
    require("agentdojo")
    from failforge.environments.agentdojo import list_user_tasks
    from failforge.seeds import oracle_seed

    return [oracle_seed("agentdojo", f"{s}/{t}") for s, t in list_user_tasks()]


@pytest.fixture()
def banking_seed() -> Trajectory:
    require("agentdojo")
    from failforge.seeds import oracle_seed

    return oracle_seed("agentdojo", "banking/user_task_3")


@pytest.fixture(scope="session")
def docker_ok() -> bool:
    """The docker sandbox backend works here (skip outside CI, fail under CI: see tests/_required.py)."""
    require("docker")
    return True


@pytest.fixture(scope="session")
def local_sandbox_ok() -> bool:
    """The local (bubblewrap) sandbox backend works here (needs root, bwrap, cgroups)."""
    require("local_sandbox")
    return True


@pytest.fixture(scope="session")
def chromium_ok() -> bool:
    require("chromium")
    return True


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("FAILFORGE_NO_REEXEC", "")
    if on_ci():
        shrinking = [name for name in COVERAGE_SHRINKING if os.environ.get(name)]
        if shrinking:
            raise pytest.UsageError(
                f"CI=true but {', '.join(shrinking)} is set: these variables shrink what the suite covers and are"
                " refused on CI"
            )
