#!/usr/bin/env bash
# Mutation testing (reference/explore/MUTATION.md): mutmut 3 over reference/fixed/ and the
# shared manager and receiver ([tool.mutmut] in pyproject.toml), killed by the lesson tests
# and the explorations. It runs under frontrun so tests/test_explore_impl.py explores in
# pytest's own process, where mutmut sees which test reaches which function.
# Not part of ci/test.sh (tests/test_mutation_sample.py is): 9 min here, which would take CI
# past its 15-minute budget.
# Usage: bash ci/mutation.sh [--fresh]    (mutmut resumes an earlier run unless --fresh)
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh test
if [ "${1:-}" = --fresh ]; then rm -rf mutants; fi
# frontrun's cooperative locks warn at every fork (logging's _at_fork_reinit): harmless noise.
PYTHONPATH= .venv/bin/frontrun .venv/bin/mutmut run --max-children "${MUTMUT_CHILDREN:-2}" 2> mutants.log || true
.venv/bin/mutmut export-cicd-stats
.venv/bin/python -m reference.explore.mutation_report
