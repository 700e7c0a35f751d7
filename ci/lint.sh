#!/usr/bin/env bash
# Style gates: ruff lint, ruff format, mypy. Assumes ci/setup.sh test was run.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check reference tests benchmarks notebooks/exercises
.venv/bin/ruff format --check reference tests benchmarks notebooks/exercises
.venv/bin/mypy
