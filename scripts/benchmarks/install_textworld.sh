#!/usr/bin/env bash
# TextWorld (textworld 1.7) and its default game set. Games are not committed: tw-make generates each from
# a fixed (recipe, seed) into the cache (~/.cache/failforge/textworld, or $FAILFORGE_TEXTWORLD_CACHE);
# existing games are kept, two are generated at a time (6-11 s each). textworld's dependencies (jericho,
# spacy) add packages but change none that failforge's extras pin (checked with pip install --dry-run).
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import importlib.metadata as m, sys; sys.exit(0 if m.version("textworld").startswith("1.7.") else 1)' 2>/dev/null; then
  "$PYTHON" -m pip install 'textworld==1.7.*'
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
ids=$("$PYTHON" -c 'from failforge.environments.textworld_env import TextWorldEnvironment, TextWorldOptions; print("\n".join(TextWorldEnvironment().tasks(TextWorldOptions())))')
echo "$ids" | xargs -P 2 -n 1 "$PYTHON" -m failforge.environments.textworld_env >/dev/null
echo "textworld: $(echo "$ids" | wc -l) games in ${FAILFORGE_TEXTWORLD_CACHE:-$HOME/.cache/failforge/textworld}" >&2
