# Sourced by scripts/external/install_*.sh: make_venv NAME CHECK REQUIREMENT...
#   Creates $FAILFORGE_VENVS/NAME with the requirements unless its python already runs CHECK.
make_venv() {
  local name="$1" check="$2"
  shift 2
  local py="${PYTHON:-python3}"
  local venv="${FAILFORGE_VENVS:-$HOME/.cache/failforge/venvs}/$name"
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" >/dev/null 2>&1; then
    return 0
  fi
  echo "failforge: creating the $name virtual environment ($*) in $venv ..." >&2
  rm -rf "$venv"
  "$py" -m venv "$venv"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip install --quiet --root-user-action=ignore "$@"
  "$venv/bin/python" -c "$check" || { echo "failforge: the $name environment does not work" >&2; return 1; }
}
