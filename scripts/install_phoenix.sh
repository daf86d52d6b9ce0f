#!/usr/bin/env bash
# Arize Phoenix, the OpenTelemetry consumer the OTLP export is checked against
# (tests/integration/test_otel_phoenix.py): a Phoenix server started on loopback ingests failforge's
# OTLP-JSON traces and its client reads them back. Phoenix pins many packages of its own (SQLAlchemy,
# grpcio, pandas, ...), so it lives in a virtual environment of its own under $FAILFORGE_VENVS
# (default ~/.cache/failforge/venvs/phoenix). Idempotent: a venv that already has the pinned versions
# is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/external/venv.sh
make_venv phoenix \
  "import importlib.metadata as m, phoenix.server.main, phoenix.client; \
assert (m.version('arize-phoenix'), m.version('arize-phoenix-client')) == ('20.26.1', '3.5.0')" \
  "arize-phoenix==20.26.1" "arize-phoenix-client==3.5.0"
