"""Shared fixtures: the real local model server, real AgentDojo oracle seeds, the bundled seeds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from failforge.trajectory import Trajectory, load_jsonl

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"


@pytest.fixture(scope="session")
def local_model():
    """The embedded llama.cpp server (started once per test session, stopped at the end)."""
    from failforge.llm import LocalModelServer

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
    from failforge.environments.agentdojo_env import list_user_tasks
    from failforge.seeds import oracle_seed

    return [oracle_seed("agentdojo", f"{s}/{t}") for s, t in list_user_tasks()]


@pytest.fixture()
def banking_seed() -> Trajectory:
    from failforge.seeds import oracle_seed

    return oracle_seed("agentdojo", "banking/user_task_3")


@pytest.fixture(scope="session")
def docker_ok() -> bool:
    """The docker sandbox backend works here; a missing engine fails (it is installed by scripts/install.sh)."""
    if os.environ.get("FAILFORGE_SANDBOX_SKIP_DOCKER"):
        pytest.skip("FAILFORGE_SANDBOX_SKIP_DOCKER is set")
    from failforge.environments.sandbox import sandbox_doctor

    row = sandbox_doctor(backends=("docker",))[0]
    if not row.works:
        pytest.fail(f"docker backend unavailable: {row.why}. Run: bash scripts/install_sandbox.sh (or set FAILFORGE_SANDBOX_SKIP_DOCKER=1)")
    return True


def pytest_configure(config):  # noqa: D103
    os.environ.setdefault("FAILFORGE_NO_REEXEC", "")
