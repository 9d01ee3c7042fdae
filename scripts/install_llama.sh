#!/usr/bin/env bash
# Build llama-cpp-python from source with the AMX kernels disabled, into the venv of $PYTHON.
#
# Why: PyPI has only the sdist. A default build enables llama.cpp's AMX kernels when the compiler
# sees AMX support, and that build segfaults on some CPUs (upstream llama.cpp #20824). We compile
# with -mno-amx-* and without the (unused) LLaVA library, and never through pip's wheel cache,
# because a cached default-flags wheel would otherwise be reused silently.
#
# Idempotent: after a successful build we write a marker next to the installed package recording
# the version, the flags and the sha256 of the compiled libraries. A later run skips the build when
# llama_cpp imports, has the pinned version, and its libraries still match the marker (so a later
# plain `pip install llama-cpp-python` that replaced them is detected and rebuilt).
#
# Usage: PYTHON=.venv/bin/python [CCPT_CONSTRAINTS=requirements.lock] bash scripts/install_llama.sh [--force]
# CCPT_CONSTRAINTS pins the runtime dependencies to a lock file (not the build: its isolated build
# environment keeps its own requirements).
set -euo pipefail

PYTHON="${PYTHON:-python}"
LLAMA_VERSION="${LLAMA_CPP_VERSION:-0.3.36}"
AMX_OFF="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
MARKER_NAME=".ccpt-amx-safe-build.json"
FORCE=0
[[ "${1:-}" == "--force" ]] && FORCE=1

# Prints "ok" when an AMX-safe build of the pinned version is importable, else a reason.
check_build() {
  "$PYTHON" - "$LLAMA_VERSION" "$MARKER_NAME" <<'EOF'
import hashlib, json, sys
from pathlib import Path

want, marker_name = sys.argv[1], sys.argv[2]
try:
    import llama_cpp
except Exception as exc:  # not installed, or a broken install
    print(f"llama_cpp not importable ({type(exc).__name__})")
    sys.exit(0)
pkg = Path(llama_cpp.__file__).parent
if getattr(llama_cpp, "__version__", None) != want:
    print(f"installed version {getattr(llama_cpp, '__version__', '?')} != {want}")
    sys.exit(0)
marker = pkg / marker_name
if not marker.is_file():
    print("no AMX-safe build marker (built with default flags?)")
    sys.exit(0)
recorded = json.loads(marker.read_text()).get("libs", {})
libs = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((pkg / "lib").glob("*.so*"))}
print("ok" if libs and libs == recorded else "compiled libraries changed since the AMX-safe build")
EOF
}

write_marker() {
  "$PYTHON" - "$LLAMA_VERSION" "$MARKER_NAME" "$CMAKE_ARGS" <<'EOF'
import hashlib, json, sys
from pathlib import Path

import llama_cpp

version, marker_name, cmake_args = sys.argv[1:4]
pkg = Path(llama_cpp.__file__).parent
libs = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((pkg / "lib").glob("*.so*"))}
if not libs:
    sys.exit(f"no compiled libraries found under {pkg / 'lib'}")
(pkg / marker_name).write_text(json.dumps({"version": version, "cmake_args": cmake_args, "libs": libs}, indent=1))
print(f"marker written: {pkg / marker_name}")
EOF
}

if ! "$PYTHON" -c 'import sys' 2>/dev/null; then
  echo "install_llama.sh: cannot run PYTHON=$PYTHON" >&2
  exit 1
fi

status="$(check_build)"
if [[ "$status" == "ok" && "$FORCE" == 0 ]]; then
  echo "llama-cpp-python $LLAMA_VERSION (AMX-safe build) already installed; skipping."
  exit 0
fi
echo "Building llama-cpp-python $LLAMA_VERSION from source (${status}); this takes ~3-4 min on 2 cores..."

export CMAKE_ARGS="-DLLAVA_BUILD=OFF -DCMAKE_C_FLAGS='${AMX_OFF}' -DCMAKE_CXX_FLAGS='${AMX_OFF}'"
# Parallel compile over all cores; the build is CPU-bound.
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}"
"$PYTHON" -m pip install --no-cache-dir --force-reinstall --no-deps "llama-cpp-python==${LLAMA_VERSION}"
# Runtime deps (numpy, typing-extensions, diskcache, jinja2) without touching what is already satisfied.
CONSTRAINTS=()
[[ -n "${CCPT_CONSTRAINTS:-}" ]] && CONSTRAINTS=(-c "$CCPT_CONSTRAINTS")
"$PYTHON" -m pip install "${CONSTRAINTS[@]}" "llama-cpp-python==${LLAMA_VERSION}"
write_marker

status="$(check_build)"
if [[ "$status" != "ok" ]]; then
  echo "install_llama.sh: build finished but the check failed: $status" >&2
  exit 1
fi
echo "llama-cpp-python $LLAMA_VERSION installed (AMX-safe build)."
