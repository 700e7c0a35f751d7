#!/usr/bin/env bash
# The README's test command: set up, lint, then run the whole test suite.
# The sglang wheels for the upstream fidelity tests are fetched (cached) first; where the
# registry is unreachable those tests skip, except under CI, where a missing wheel fails.
# Usage: bash ci/test.sh [--quick] [pytest args...]   (--quick: lint and the quick tier only)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
if [ "${1:-}" = --quick ]; then quick=1; shift; fi
bash ci/setup.sh test,bench,notebooks
bash ci/lint.sh
if ! bash ci/upstream.sh --fetch-only; then
  echo "ci/test.sh: sglang wheels unavailable; upstream fidelity tests will skip" >&2
fi
if [ "${CI:-}" = true ]; then export SGLANG_WHEELS_REQUIRED=1; fi
# Two workers, one per core here. The quick tier first (in-process, mock transport, virtual
# clock: every lesson, check, exploration, revert; about 4 minutes here), then the slow tier (real
# processes, sockets, KV backends, notebook kernels, fuzzing, time bounds): tests/conftest.py.
tier() {  # exit 5 (nothing selected: arguments naming only the other tier's tests) is fine
  .venv/bin/python -m pytest -n 2 -rs -m "$@" || [ $? -eq 5 ]  # -rs: each skip with its reason
}
tier "not slow and not netns" "$@"
if [ "$quick" = 1 ]; then exit 0; fi
tier "slow and not netns" "$@"
# The netns tier (hosts in their own network namespaces; root, iproute2, nftables: .ci/run
# installs them): one worker, as its tests count the namespaces and processes left behind.
tier netns -n 0 "$@"
.venv/bin/python -m benchmarks --smoke  # quick mode, checks its output; a MISSED target is reported, not a failure
bash ci/notebooks.sh  # every notebook executed (nbmake), 60 s each at most
