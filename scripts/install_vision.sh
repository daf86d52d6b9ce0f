#!/usr/bin/env bash
# The vision policy's OCR (failforge.environments.miniwob._vision_policy): Debian's tesseract-ocr + English data.
set -euo pipefail
if command -v tesseract >/dev/null 2>&1; then
  echo "tesseract present: $(tesseract --version 2>&1 | head -1)"
  exit 0
fi
SUDO=""
[ "$(id -u)" = "0" ] || SUDO="sudo"
$SUDO apt-get install -y --no-install-recommends tesseract-ocr tesseract-ocr-eng
tesseract --version 2>&1 | head -1
