#!/usr/bin/env bash
# Semantic mutation testing (reference/mutate/README.md): ConMAn-style concurrency and
# lifecycle mutants of reference/fixed and reference/hardened, each judged by the default
# `python -m reference --impl COPY` run over the lessons its module takes part in; writes
# reference/mutate/results.json and RESULTS.md. Not part of ci/test.sh
# (tests/test_mutate_operators.py is): about 20 minutes on 2 cores.
# Usage: bash ci/semantic_mutation.sh [python -m reference.mutate options]
#   e.g. --sample 200 --seed 0 (a deterministic sample), --variant fixed, --jobs 2
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh test
PYTHONPATH="$PWD" nice -n 10 .venv/bin/python -m reference.mutate --jobs "${MUTATE_JOBS:-2}" "$@"
