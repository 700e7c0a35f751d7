#!/usr/bin/env bash
# The GPU half of the KV transfer backend checks, for a machine with a CUDA GPU (a
# device machine lent to a task; nothing here needs the network). Runs, each under a
# time bound: the environment report, backend discovery, the backend tests with CUDA
# memory (torch CUDA tensors; Mooncake and NIXL registering VRAM where their builds
# can), the same tests on host memory as a control, lesson `stale-bootstrap` over each
# backend with its KV buffers on the GPU (REFERENCE_KV_DEVICE=cuda) and on host memory,
# and the recovery benchmark once it exists.
# Results go to $1 (default: ${OUT:-.}/gpu-check.txt). Exit 1 when a check that could
# run failed; checks that cannot run here are listed as skipped with the reason.
set -uo pipefail
cd "$(dirname "$0")/.."
results=${1:-${OUT:-.}/gpu-check.txt}
py=.venv/bin/python
[ -x "$py" ] || py=$(command -v python3)
failed=0
: >"$results"

say() { echo "$*" | tee -a "$results"; }

check() {  # check NAME SECONDS COMMAND...: run bounded, record status, time and output tail
  local name=$1 limit=$2 t0=$SECONDS out rc status
  shift 2
  out=$(timeout "$limit" "$@" 2>&1)
  rc=$?
  case $rc in
    0) status=pass ;;
    2) status="UNKNOWN (exit 2: a verdict could not be decided)"; failed=1 ;;
    124) status="FAIL (timed out after ${limit}s)"; failed=1 ;;
    *) status="FAIL (exit $rc)"; failed=1 ;;
  esac
  say "== $name: $status, $((SECONDS - t0))s"
  echo "$out" | tail -n 40 >>"$results"
}

skip() { say "== $1: skipped: $2"; }

say "gpu-check $(date -u +%FT%TZ) on $(hostname), python: $py"
check "nvidia-smi" 30 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
check "torch sees CUDA" 120 "$py" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)
assert torch.cuda.is_available(), "no CUDA GPU visible to torch: the CUDA-memory tests below will skip"'
check "backends" 120 "$py" -m reference.dataplane

if ! "$py" -c 'import pytest, zmq, psutil' 2>/dev/null; then
  skip "backend tests" "pytest, pyzmq or psutil missing for $py (bash ci/setup.sh test)"
else
  check "backend tests, CUDA memory" 600 "$py" -m pytest tests/test_dataplane.py --device cuda -q -rs
  check "backend tests, host memory" 600 "$py" -m pytest tests/test_dataplane.py -q -rs
fi

if "$py" -m reference --help 2>/dev/null | grep -q -- '--backend'; then
  # The lesson's prefill and decode ranks put their KV buffers on the GPU.
  for backend in mooncake nixl torch; do  # default moves host bytes only
    if [ "$backend" = mooncake ] && "$py" -c 'import sys
from reference.dataplane.mooncake_plane import host_only_build
sys.exit(0 if host_only_build() else 1)' 2>/dev/null; then
      skip "stale-bootstrap over mooncake, CUDA memory" "mooncake-transfer-engine-non-cuda is installed (host memory only)"
      continue
    fi
    check "stale-bootstrap over $backend, CUDA memory" 300 env REFERENCE_KV_DEVICE=cuda \
      "$py" -m reference --json --transport loopback --lesson stale-bootstrap --backend "$backend"
  done
  check "stale-bootstrap over backends, host memory" 600 \
    "$py" -m pytest tests/test_stale_bootstrap_backends.py -q -rs
else
  skip "stale-bootstrap over backends" "this CLI has no --backend yet"
fi

bench=$(ls benchmarks/*recovery*.py 2>/dev/null | head -n 1)
if [ -z "$bench" ]; then
  skip "recovery benchmark" "no benchmarks/*recovery*.py yet"
elif [[ $(basename "$bench") == test_* || $(basename "$bench") == bench_* ]]; then
  check "recovery benchmark" 600 "$py" -m pytest "$bench" -q
else
  check "recovery benchmark" 600 "$py" "$bench"
fi

say "gpu-check: $([ "$failed" = 0 ] && echo 'every check that ran passed' || echo 'FAILED'); results in $results"
exit "$failed"
