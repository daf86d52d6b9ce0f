#!/usr/bin/env bash
# Install (idempotent) and run the test suite. PYTHONHASHSEED is pinned as the failforge CLI pins it:
# AgentDojo orders calendar participants by set iteration, which follows the string-hash seed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
PYTHONHASHSEED=0 exec "${PYTHON:-python3}" -m pytest -q "$@"
