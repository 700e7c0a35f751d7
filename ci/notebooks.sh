#!/usr/bin/env bash
# Execute every notebook in notebooks/ with nbmake: a failing cell fails, and each
# notebook gets at most 60 s (pytest-timeout per notebook, nbmake per cell). First
# lint the jupytext .py twins (tests/test_notebook_twins.py checks each .ipynb matches).
# Installs the `notebooks` extra when it is missing. Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -c "import nbmake, jupytext, matplotlib, pytest_timeout" 2>/dev/null \
  || bash ci/setup.sh test,notebooks
.venv/bin/ruff check notebooks/*.py
.venv/bin/ruff format --check notebooks/*.py
# As a learner runs them: from notebooks/, with only the venv (its editable install of
# this checkout provides `reference` and `benchmarks`; no PYTHONPATH). Plots draw headless.
cd notebooks
MPLBACKEND=Agg ../.venv/bin/python -m pytest -q -p nbmake --nbmake . --nbmake-timeout=60 --timeout=60 "$@"
