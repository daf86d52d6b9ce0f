#!/usr/bin/env bash
# The vision policy's OCR (failforge.environments.miniwob._vision_policy): Debian's tesseract-ocr + English data.
set -euo pipefail
if command -v tesseract >/dev/null 2>&1; then
  echo "tesseract present: $(tesseract --version 2>&1 | head -1)"
  exit 0
fi
SUDO=""
[ "$(id -u)" = "0" ] || SUDO="sudo"
# Update the package lists only when apt has never fetched them, or cannot see tesseract (as install_browser.sh).
if [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v -e '^lock$' -e '^partial$' || true)" ] \
   || ! apt-cache show tesseract-ocr >/dev/null 2>&1; then
  $SUDO apt-get update -o DPkg::Lock::Timeout=600
fi
$SUDO apt-get install -y -o DPkg::Lock::Timeout=600 --no-install-recommends tesseract-ocr tesseract-ocr-eng
tesseract --version 2>&1 | head -1
