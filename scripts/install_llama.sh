#!/usr/bin/env bash
# Build llama-cpp-python from source for one fixed x86-64 instruction set, into the venv of $PYTHON.
#
# Why a fixed instruction set: llama.cpp's default build targets the build machine's own CPU
# (-march=native), so machines with different CPUs run different kernels (AVX2, AVX-512, VNNI …), sum in
# different orders, sample different tokens and print different tables. Here GGML_NATIVE is off and the
# kernels are chosen explicitly: x86-64-v3 = SSE4.2, AVX, AVX2, FMA, F16C, BMI2; no AVX-512, no AVX-VNNI,
# no AMX. The same command then runs the same kernels on every CPU that has x86-64-v3: Intel Haswell (2013)
# and later Core/Xeon, AMD Excavator and Zen 1 (2017) and later; not the Atom/Celeron/Pentium parts that
# lack AVX2. The AMX compiler flags stay off too (AMX kernels segfault on some CPUs, upstream llama.cpp
# #20824). A CPU without x86-64-v3, or a non-x86 machine, gets a native build instead, with a warning: it
# runs, but its numbers are not the README's.
# The LLaVA library and llama.cpp's "common" helper library (both unused by the Python package; common is about
# half of the compile, scripts/llama_without_common.cmake) are not built, and pip's wheel cache is never used,
# because a cached default-flags wheel would otherwise be reused silently.
#
# Idempotent: after a successful build we write a marker next to the installed package recording the
# version, the instruction set, the flags and the sha256 of the compiled libraries. A later run skips the
# build when llama_cpp imports, has the pinned version and instruction set, and its libraries still match
# the marker (so a later plain `pip install llama-cpp-python` that replaced them is detected and rebuilt,
# and so is a build made by an older setup for the native CPU).
#
# Usage: PYTHON=.venv/bin/python [CCPT_CONSTRAINTS=requirements.lock] bash scripts/install_llama.sh [--force]
#        ... install_llama.sh --wheel-only DIR     build the wheel into DIR, touch nothing in the venv
#        ... install_llama.sh --install-wheel DIR  install the wheel --wheel-only built (no compiling)
# The two halves let scripts/setup.sh compile while pip installs everything else into the venv: `pip wheel`
# works in its own isolated build environment, so the two never write to the venv at the same time.
# Either half does nothing when a matching build is already installed (and --wheel-only then leaves DIR empty).
# CCPT_CONSTRAINTS pins the runtime dependencies to a lock file (not the build: its isolated build
# environment keeps its own requirements). CCPT_LLAMA_ISA=native asks for a native build (not reproducible
# across CPUs; faster on CPUs with AVX-512).
set -euo pipefail

PYTHON="${PYTHON:-python}"
SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LLAMA_VERSION="${LLAMA_CPP_VERSION:-0.3.36}"
AMX_OFF="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
MARKER_NAME=".ccpt-llama-build.json"
ISA="${CCPT_LLAMA_ISA:-x86-64-v3}"
FORCE=0
MODE="both"  # both | wheel-only | install-wheel
WHEEL_DIR=""
while (( $# )); do
  case "$1" in
    --force) FORCE=1 ;;
    --wheel-only|--install-wheel)
      MODE="${1#--}"
      WHEEL_DIR="${2:?install_llama.sh: $1 needs a directory}"
      shift ;;
    *) echo "install_llama.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

# The CPU flags (Linux names, /proc/cpuinfo) x86-64-v3 code needs at run time.
V3_CPU_FLAGS="sse4_2 avx avx2 fma f16c bmi2"
if [[ "$ISA" == "x86-64-v3" ]]; then
  missing=""
  if [[ "$(uname -m)" != "x86_64" ]]; then
    missing="not an x86-64 machine ($(uname -m))"
  else
    for flag in $V3_CPU_FLAGS; do
      grep -qw "$flag" /proc/cpuinfo 2>/dev/null || missing="$missing $flag"
    done
  fi
  if [[ -n "$missing" ]]; then
    echo "install_llama.sh: warning: this CPU lacks x86-64-v3 (${missing# }); building for the native CPU instead:" >&2
    echo "  the embedded model runs, but the README's offline table will not reproduce to the digit here." >&2
    ISA="native"
  fi
fi
ISA_ARGS=""
if [[ "$ISA" == "x86-64-v3" ]]; then
  ISA_ARGS="-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
  ISA_ARGS="$ISA_ARGS -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF"
  ISA_ARGS="$ISA_ARGS -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
fi

# Prints "ok" when a build of the pinned version for $ISA is importable, else a reason.
check_build() {
  "$PYTHON" - "$LLAMA_VERSION" "$MARKER_NAME" "$ISA" <<'EOF'
import hashlib, json, sys
from pathlib import Path

want, marker_name, isa = sys.argv[1], sys.argv[2], sys.argv[3]
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
    print("no ccpt build marker (built with default flags, or by an older setup for the native CPU)")
    sys.exit(0)
record = json.loads(marker.read_text())
if record.get("isa") != isa:
    print(f"built for {record.get('isa')!r}, not {isa!r}")
    sys.exit(0)
libs = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((pkg / "lib").glob("*.so*"))}
print("ok" if libs and libs == record.get("libs") else "compiled libraries changed since the ccpt build")
EOF
}

write_marker() {
  "$PYTHON" - "$LLAMA_VERSION" "$MARKER_NAME" "$CMAKE_ARGS" "$ISA" <<'EOF'
import hashlib, json, sys
from pathlib import Path

import llama_cpp

version, marker_name, cmake_args, isa = sys.argv[1:5]
pkg = Path(llama_cpp.__file__).parent
libs = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((pkg / "lib").glob("*.so*"))}
if not libs:
    sys.exit(f"no compiled libraries found under {pkg / 'lib'}")
record = {"version": version, "isa": isa, "cmake_args": cmake_args, "libs": libs}
(pkg / marker_name).write_text(json.dumps(record, indent=1))
(pkg / ".ccpt-amx-safe-build.json").unlink(missing_ok=True)  # an older setup's marker, now stale
print(f"marker written: {pkg / marker_name}")
EOF
}

if ! "$PYTHON" -c 'import sys' 2>/dev/null; then
  echo "install_llama.sh: cannot run PYTHON=$PYTHON" >&2
  exit 1
fi

status="$(check_build)"
if [[ "$status" == "ok" && "$FORCE" == 0 ]]; then
  echo "llama-cpp-python $LLAMA_VERSION ($ISA build) already installed; skipping."
  exit 0
fi

build_wheel() {  # compile into $1 without touching the venv
  echo "Building llama-cpp-python $LLAMA_VERSION for $ISA from source (${status}); this takes ~2 min on 2 cores..."
  export CMAKE_ARGS="-DLLAVA_BUILD=OFF ${ISA_ARGS} -DCMAKE_C_FLAGS='${AMX_OFF}' -DCMAKE_CXX_FLAGS='${AMX_OFF}'"
  CMAKE_ARGS="$CMAKE_ARGS -DCMAKE_PROJECT_llama.cpp_INCLUDE='${SCRIPTS}/llama_without_common.cmake'"
  # Parallel compile over all cores; the build is CPU-bound.
  export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}"
  mkdir -p "$1"
  "$PYTHON" -m pip wheel --quiet --no-cache-dir --no-deps --wheel-dir "$1" "llama-cpp-python==${LLAMA_VERSION}"
  # The ISA travels with the wheel: --install-wheel must not mark a wheel built for another one.
  printf '%s\n%s\n' "$ISA" "$CMAKE_ARGS" > "$1/.ccpt-llama-isa"
}

install_wheel() {  # install what build_wheel put in $1, its runtime deps, and the marker
  local wheels=("$1"/llama_cpp_python-"${LLAMA_VERSION}"-*.whl)
  if [[ ! -f "${wheels[0]}" || ! -f "$1/.ccpt-llama-isa" ]]; then
    echo "install_llama.sh: no llama-cpp-python $LLAMA_VERSION wheel in $1 (run --wheel-only first)" >&2
    exit 1
  fi
  ISA="$(sed -n 1p "$1/.ccpt-llama-isa")"
  CMAKE_ARGS="$(sed -n 2p "$1/.ccpt-llama-isa")"
  "$PYTHON" -m pip install --quiet --no-cache-dir --force-reinstall --no-deps "${wheels[0]}"
  # Runtime deps (numpy, typing-extensions, diskcache, jinja2) without touching what is already satisfied.
  CONSTRAINTS=()
  [[ -n "${CCPT_CONSTRAINTS:-}" ]] && CONSTRAINTS=(-c "$CCPT_CONSTRAINTS")
  "$PYTHON" -m pip install --quiet "${CONSTRAINTS[@]}" "llama-cpp-python==${LLAMA_VERSION}"
  write_marker
  status="$(check_build)"
  if [[ "$status" != "ok" ]]; then
    echo "install_llama.sh: build finished but the check failed: $status" >&2
    exit 1
  fi
  echo "llama-cpp-python $LLAMA_VERSION installed ($ISA build)."
}

case "$MODE" in
  wheel-only) build_wheel "$WHEEL_DIR" ;;
  install-wheel) install_wheel "$WHEEL_DIR" ;;
  both)
    WHEEL_DIR="$(mktemp -d)"
    build_wheel "$WHEEL_DIR"
    install_wheel "$WHEEL_DIR"
    rm -rf "$WHEEL_DIR" ;;
esac
