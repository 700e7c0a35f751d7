"""`pytest --impl MODULE` is bounded like the CLI: a module that hangs in a lesson fails
that lesson's test with `unknown: hit its time bound`, one that hangs at import stops
the session with one line (tests/impl_option.py, tests/bad_impls/)."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_pytest(module: str) -> subprocess.CompletedProcess:
    args = ["--impl", f"tests/bad_impls/{module}", "--impl-timeout", "1", "-p", "no:xdist", "-q"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args], cwd=ROOT, capture_output=True, text=True, timeout=50
    )


def test_a_lesson_that_hangs_fails_its_test_within_the_bound():
    proc = run_pytest("looping_update_status.py")
    assert proc.returncode == 1
    module = "tests/bad_impls/looping_update_status.py"
    assert re.search(
        rf"failed-resurrect on {module}: unknown: hit its time bound \(1 s\) in scenario, "
        rf"main thread at {module}:1[01] in update_status",  # line 10 or 11: where the loop was
        proc.stdout,
    )
    assert "3 failed, 1 passed" in proc.stdout


def test_an_import_that_hangs_stops_the_session_with_one_line():
    proc = run_pytest("hangs_at_import.py")
    assert proc.returncode == 4  # pytest's usage error
    assert proc.stderr.strip().splitlines() == [
        "ERROR: --impl module 'tests/bad_impls/hangs_at_import.py' hit its time bound (1 s) in import, "
        "main thread at tests/bad_impls/hangs_at_import.py:5 in <module>"
    ]
