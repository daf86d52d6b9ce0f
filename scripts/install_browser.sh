#!/usr/bin/env bash
# Install the browser failforge's MiniWoB++ environment drives: Debian's chromium. Idempotent.
#
# Why Debian's package and not `playwright install`: this machine reaches package registries only, and
# Playwright's own browser download is not one. failforge launches /usr/bin/chromium through
# Playwright's `executable_path`. The Python side (playwright, miniwob) comes from pip:
#   pip install -e ".[browser]"     (or: pip install 'playwright>=1.40' 'miniwob>=1.0')
set -euo pipefail
CHROMIUM="${FAILFORGE_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ] && "$CHROMIUM" --headless --no-sandbox --version >/dev/null 2>&1; then
  echo "failforge: chromium already installed ($("$CHROMIUM" --version 2>/dev/null))" >&2
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# Update the package lists once: only when apt has never fetched them, or cannot see chromium.
if [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v -e '^lock$' -e '^partial$' || true)" ] \
   || ! apt-cache show chromium >/dev/null 2>&1; then
  $SUDO apt-get update -o DPkg::Lock::Timeout=600
fi
$SUDO apt-get install -y -o DPkg::Lock::Timeout=600 chromium
"$CHROMIUM" --headless --no-sandbox --version >/dev/null 2>&1 \
  || { echo "failforge: chromium installed but $CHROMIUM does not run" >&2; exit 1; }
echo "failforge: chromium installed ($("$CHROMIUM" --version 2>/dev/null))" >&2
