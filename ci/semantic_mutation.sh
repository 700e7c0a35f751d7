#!/usr/bin/env bash
# Semantic mutation testing (reference/mutate/README.md): ConMAn-style concurrency and
# lifecycle mutants of reference/fixed and reference/hardened, each judged by the default
# `python -m reference --impl COPY` run over the lessons its module takes part in; writes
# reference/mutate/results.json and RESULTS.md. Not part of ci/test.sh
# (tests/test_mutate_operators.py is).
# The default run spends its deep-check budget (about 40 s) on every mutant, so with no arguments
# this judges a seeded sample in two stages: `--quick` first (story and checks, about 3 s),
# then the default run for the quick stage's survivors only; about 20 minutes on 2 cores (the
# committed sample, --sample 200 --seed 1, took 43 min on 2 shared cores).
# Usage: bash ci/semantic_mutation.sh [python -m reference.mutate options]
#   e.g. --sample 200 --seed 1, --variant fixed, --prefilter-args=--quick (the = is needed)
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh test
if [ $# -eq 0 ]; then
  set -- --sample "${MUTATE_SAMPLE:-60}" --seed 0 --prefilter-args=--quick
fi
PYTHONPATH="$PWD" nice -n 10 .venv/bin/python -m reference.mutate --jobs "${MUTATE_JOBS:-2}" "$@"
