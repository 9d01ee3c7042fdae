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
# The LLaVA library (unused) is not built, and pip's wheel cache is never used, because a cached
# default-flags wheel would otherwise be reused silently.
#
# Idempotent: after a successful build we write a marker next to the installed package recording the
# version, the instruction set, the flags and the sha256 of the compiled libraries. A later run skips the
# build when llama_cpp imports, has the pinned version and instruction set, and its libraries still match
# the marker (so a later plain `pip install llama-cpp-python` that replaced them is detected and rebuilt,
# and so is a build made by an older setup for the native CPU).
#
# Usage: PYTHON=.venv/bin/python [CCPT_CONSTRAINTS=requirements.lock] bash scripts/install_llama.sh [--force]
# CCPT_CONSTRAINTS pins the runtime dependencies to a lock file (not the build: its isolated build
# environment keeps its own requirements). CCPT_LLAMA_ISA=native asks for a native build (not reproducible
# across CPUs; faster on CPUs with AVX-512).
set -euo pipefail

PYTHON="${PYTHON:-python}"
LLAMA_VERSION="${LLAMA_CPP_VERSION:-0.3.36}"
AMX_OFF="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
MARKER_NAME=".ccpt-llama-build.json"
ISA="${CCPT_LLAMA_ISA:-x86-64-v3}"
FORCE=0
[[ "${1:-}" == "--force" ]] && FORCE=1

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
echo "Building llama-cpp-python $LLAMA_VERSION for $ISA from source (${status}); this takes ~3-4 min on 2 cores..."

export CMAKE_ARGS="-DLLAVA_BUILD=OFF ${ISA_ARGS} -DCMAKE_C_FLAGS='${AMX_OFF}' -DCMAKE_CXX_FLAGS='${AMX_OFF}'"
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
echo "llama-cpp-python $LLAMA_VERSION installed ($ISA build)."
