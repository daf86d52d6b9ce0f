#!/usr/bin/env bash
# Benchmarks that cannot be a plain extra of pyproject.toml (a package installed with --no-deps beside
# the few dependencies its environment/evaluator path really imports, generated game files, a JRE):
# each scripts/benchmarks/install_*.sh installs one into failforge's own Python ($PYTHON, default
# python3), idempotently (what is already there at the pinned version is left as it is). scripts/install.sh
# runs this after the extras are in, so the dependency pins of .[all] are settled first.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHON="${PYTHON:-python3}"
shopt -s nullglob
for script in scripts/benchmarks/install_*.sh; do
  echo "failforge: $(basename "$script") ..." >&2
  bash "$script"
done
