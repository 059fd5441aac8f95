#!/bin/bash
# The XLA backend on a GPU, in one short run: what the machine has, the benchmark suite's
# GPU-capable systems (jax.jit and lazyx through NumPy and torch; TensorFlow is left out, as
# GPU images rarely hold tensorflow-cpu), then the test suites that run on the XLA backend.
# Run from the repository root on a machine whose jax sees a GPU:
#     OUT=/tmp/gpu bash benchmarks/gpu_check.sh
# Every stage has its own time limit (seconds: BENCH_S, TESTS_S) and writes its log under
# $OUT, so a stage that runs out of time still leaves what it did. Uses the machine's own
# python3 (jax with its CUDA plugin, torch); nothing is installed.
set -u
OUT=${OUT:-/tmp/lazyx-gpu}
BENCH_S=${BENCH_S:-200}
TESTS_S=${TESTS_S:-220}
WORKERS=${WORKERS:-12}
# what to run (a rerun narrows them): bench systems and workloads, test paths under tests/
SYSTEMS=${SYSTEMS:-"jax.jit,lazyx-numpy,lazyx-torch,lazyx-numpy+compile,lazyx-torch+compile,torch.compile(lazyx)"}
WORKLOADS=${WORKLOADS:-W1,W2,W3,W4}
TESTS=${TESTS:-"backends core frontends/numpy frontends/torch"}
mkdir -p "$OUT"
cd "$(dirname "$0")/.." || exit 1
REPO=$PWD

# The repository root is the package: import it as `lazyx` through a link (as tests/conftest.py
# does in a bare checkout), and build the C tracing core for this machine's Python.
mkdir -p .dev && ln -sfn "$REPO" .dev/lazyx
export PYTHONPATH=$REPO/.dev${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1 CI=true LAZYX_BACKEND=xla
# several test processes share the GPU: each takes memory as it needs it, not 75 % up front
export XLA_PYTHON_CLIENT_PREALLOCATE=false
{
  date; nvidia-smi -L; python3 -V
  python3 - <<'EOF'
import jax, jaxlib, numpy, torch
print("jax", jax.__version__, "jaxlib", jaxlib.__version__, "numpy", numpy.__version__,
      "torch", torch.__version__)
print("devices", jax.devices())
EOF
  inc=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  suffix=$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  gcc -O2 -shared -fPIC -Werror=implicit-function-declaration -I"$inc" core/_native.c core/_native_live.c \
      -o "core/_native$suffix" && echo "built core/_native$suffix" || echo "no C core: pure-Python path"
  python3 -c 'import lazyx, lazyx.core.config as c, jax
print("lazyx", lazyx.__file__, "native", c.native() is not None, "device", jax.local_devices()[0])'
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

echo "== bench (quick), limit ${BENCH_S}s"
timeout -s INT -k 15 "$BENCH_S" python3 -m lazyx bench --quick \
    --systems "$SYSTEMS" --workloads "$WORKLOADS" --json "$OUT/bench_gpu.json" --markdown "$OUT/bench_gpu.md" > "$OUT/bench.log" 2>&1
echo "bench rc=$?"; tail -n 40 "$OUT/bench.log"

echo "== tests on the XLA backend, limit ${TESTS_S}s"
# Interrupted at the limit (SIGINT), pytest still prints the failures it has seen.
(cd /tmp && timeout -s INT -k 20 "$TESTS_S" python3 -m pytest --rootdir="$REPO/tests" \
    -n "$WORKERS" -q -rfE --tb=line -p no:randomly \
    $(for t in $TESTS; do echo "$REPO/tests/$t"; done)) > "$OUT/tests.log" 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed|error" "$OUT/tests.log" | tail -n 60
