#!/usr/bin/env bash
# ScienceWorld (scienceworld 1.2.3: a Python wrapper over a bundled Scala jar, run on a JVM through py4j).
# Its only Python dependency is py4j; `pip install --dry-run scienceworld==1.2.3` changes nothing that
# failforge's extras pin, so it is a plain install. The jar needs Java (17 measured): Debian's
# default-jre-headless is installed only when `java -version` fails. Idempotent: what is already there
# at the pinned version is left as it is.
set -euo pipefail
PYTHON="${PYTHON:-python3}"
VERSION="1.2.3"

if ! java -version >/dev/null 2>&1; then
  echo "failforge: java not found; installing Debian's default-jre-headless" >&2
  SUDO=""
  if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends default-jre-headless
fi

installed="$("$PYTHON" -c 'import importlib.metadata as m; print(m.version("scienceworld"))' 2>/dev/null || true)"
if [ "$installed" != "$VERSION" ]; then
  "$PYTHON" -m pip install "scienceworld==$VERSION"
fi
"$PYTHON" -c 'import scienceworld, os; jar = os.path.join(os.path.dirname(scienceworld.__file__), "scienceworld.jar"); assert os.path.isfile(jar), jar; print("failforge: scienceworld", scienceworld.__version__ if hasattr(scienceworld, "__version__") else "", "jar", jar)'
