#!/usr/bin/env bash
# Flake check: run the test suite N times as CI runs it and report failures by test id.
# Usage: bash ci/flake.sh N [pytest args...]     e.g. bash ci/flake.sh 20
#        bash ci/flake.sh 2 tests/test_bootstrap_server.py -n 0
# Each run writes a JUnit XML report; the summary lists every test id that failed or
# errored in any run with its count ("3/20 tests/test_x.py::test_y"). Exit 0 when all N
# runs passed, 1 otherwise (the logs of the failed runs are kept and their folder named),
# 2 on bad usage. Runs $PYTHON (default .venv/bin/python, as ci/setup.sh test makes it).
set -uo pipefail
cd "$(dirname "$0")/.."
runs="${1:-}"
if ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
  echo "ci/flake.sh: error: expected a number of runs >= 1, got '${runs}'" >&2
  exit 2
fi
shift
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-n 2)  # the whole suite on two workers, as ci/test.sh
reports="$(mktemp -d)"
python="${PYTHON:-.venv/bin/python}"
failed_runs=0
trap 'if [ "$failed_runs" -eq 0 ]; then rm -rf "$reports"; fi' EXIT
for i in $(seq 1 "$runs"); do
  start=$SECONDS
  if "$python" -m pytest -q --junitxml="$reports/run$i.xml" "${args[@]}" \
      >"$reports/run$i.log" 2>&1; then
    echo "run $i/$runs: passed ($((SECONDS - start)) s)"
    rm -f "$reports/run$i.log"
  else
    failed_runs=$((failed_runs + 1))
    echo "run $i/$runs: FAILED ($((SECONDS - start)) s): $(tail -n 1 "$reports/run$i.log")"
  fi
done
"$python" - "$reports" "$runs" <<'EOF'
import collections, pathlib, sys
import xml.etree.ElementTree as ET

reports, runs = pathlib.Path(sys.argv[1]), int(sys.argv[2])
failures = collections.Counter()
for report in sorted(reports.glob("run*.xml")):
    for case in ET.parse(report).iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            path = case.get("classname", "").replace(".", "/")
            failures[f"{path}.py::{case.get('name')}"] += 1
missing = runs - len(list(reports.glob("run*.xml")))
if missing:
    print(f"{missing} run(s) left no report (collection error or crash)")
for test_id, count in failures.most_common():
    print(f"{count}/{runs} {test_id}")
if not failures and not missing:
    print(f"no failures in {runs} run(s)")
EOF
if [ "$failed_runs" -gt 0 ]; then echo "logs of the failed runs: $reports"; fi
[ "$failed_runs" -eq 0 ]
