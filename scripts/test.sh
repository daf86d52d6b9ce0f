#!/usr/bin/env bash
# Install (idempotent), check the code (ruff, mypy), then run the tests: the fast unit layer first, then
# the integration layer on the real parts. PYTHONHASHSEED is pinned as the failforge CLI pins it:
# AgentDojo orders calendar participants by set iteration, which follows the string-hash seed.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh tests/unit -x`).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
bash scripts/install.sh
"$PY" -m ruff check src tests scripts
"$PY" -m mypy
export PYTHONHASHSEED=0
if [ "$#" -gt 0 ]; then
  exec "$PY" -m pytest -q "$@"
fi
"$PY" -m pytest -q tests/unit
exec "$PY" -m pytest -q tests/integration
