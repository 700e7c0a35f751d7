#!/usr/bin/env bash
# Create .venv (if missing) and install the package with the given extras.
# Every pip call goes through ci/constraints.txt, which pins torch==2.13.0.
# Usage: bash ci/setup.sh [extra,extra,...]
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -c ci/constraints.txt -e ".${extras:+[$extras]}"
