"""On CI, every real part must be installed: a missing install step fails here instead of skipping tests."""

import importlib.util
import os
import shutil

import pytest

pytestmark = pytest.mark.skipif(os.environ.get("CI") != "true", reason="checks the CI machine's install (CI=true)")


def test_local_model_runtime_and_weights():
    from failforge.llm import local_model_path

    assert importlib.util.find_spec("llama_cpp") and local_model_path().exists()


def test_agentdojo_and_ray():
    assert importlib.util.find_spec("agentdojo") and importlib.util.find_spec("ray")


def test_browser_stack():
    assert importlib.util.find_spec("playwright") and importlib.util.find_spec("miniwob")
    assert shutil.which("chromium") or os.path.exists("/usr/bin/chromium")


def test_sandbox_stack_both_backends_work():
    from failforge.environments.sandbox import sandbox_doctor

    rows = {row.backend: row for row in sandbox_doctor()}
    assert rows["docker"].works, rows["docker"].why
    assert rows["local"].works, rows["local"].why
