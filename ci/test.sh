#!/usr/bin/env bash
# The README's test command: set up, lint, then run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh test
bash ci/lint.sh
.venv/bin/python -m pytest "$@"
