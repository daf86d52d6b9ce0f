#!/usr/bin/env bash
# BFCL multi-turn (bfcl-eval 2026.3.23) for failforge's `bfcl` environment. Installed with --no-deps:
# its declared dependencies (torch-free but heavy: openai clients of many vendors, tree-sitter, ...) are
# never imported on the multi-turn simulator/checker path, which needs only mpmath (MathAPI). Idempotent:
# a package already at the pinned version is left as it is; nothing failforge pins is touched.
set -euo pipefail
PYTHON="${PYTHON:-python3}"
BFCL_VERSION="2026.3.23"
MPMATH_VERSION="1.3.0"

have() {  # have DIST VERSION: the distribution is installed at exactly VERSION
  "$PYTHON" - "$1" "$2" <<'PY'
import sys
from importlib.metadata import PackageNotFoundError, version
try:
    sys.exit(0 if version(sys.argv[1]) == sys.argv[2] else 1)
except PackageNotFoundError:
    sys.exit(1)
PY
}

if ! have mpmath "$MPMATH_VERSION"; then
  "$PYTHON" -m pip install --no-deps "mpmath==$MPMATH_VERSION"
fi
if ! have bfcl-eval "$BFCL_VERSION"; then
  "$PYTHON" -m pip install --no-deps "bfcl-eval==$BFCL_VERSION"
fi
"$PYTHON" -c "from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker" \
  || { echo "failforge: bfcl-eval $BFCL_VERSION installed but its multi-turn checker does not import" >&2; exit 1; }
echo "failforge: bfcl-eval $BFCL_VERSION with mpmath $MPMATH_VERSION ready" >&2
