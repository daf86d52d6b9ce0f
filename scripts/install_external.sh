#!/usr/bin/env bash
# The agent frameworks failforge has no adapter for, each in a virtual environment of its own, driven as
# external agents (`--harness external`): the example teams in examples/external/ and their tests use
# them. Each scripts/external/install_*.sh creates (or keeps) one venv under $FAILFORGE_VENVS
# (default ~/.cache/failforge/venvs) with its framework pinned; idempotent: a venv that already has
# the pinned version is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
export FAILFORGE_VENVS="${FAILFORGE_VENVS:-$HOME/.cache/failforge/venvs}"
mkdir -p "$FAILFORGE_VENVS"
for script in scripts/external/install_*.sh; do
  bash "$script"
done
