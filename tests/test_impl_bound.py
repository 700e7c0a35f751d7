"""`pytest --impl MODULE` is bounded like the CLI: a module that hangs in a lesson fails
that lesson's test with `unknown: hit its time bound`, one that hangs at import stops
the session with one line (reference/harness/pytest_plugin.py, tests/bad_impls/).

The nested pytest collects only tests/test_impl.py (the explorations that `--impl`
also selects run under their own bound, tests/explore_run.py), in its own session,
which is killed whole when it ends so nothing it started can outlive the test.
"""

import re
import subprocess
from pathlib import Path

from sessions import run_in_session

ROOT = Path(__file__).resolve().parents[1]


def run_pytest(module: str) -> subprocess.CompletedProcess:
    args = [
        "--impl",
        f"tests/bad_impls/{module}",
        "--impl-timeout",
        "3",
        "-p",
        "no:xdist",
        "-q",
        "-k",
        "story",
    ]
    proc, left = run_in_session(["-m", "pytest", *args, "tests/test_impl.py"], timeout=55)
    assert left == [], "pytest --impl left processes behind"
    return proc


def test_a_lesson_that_hangs_fails_its_test_within_the_bound():
    proc = run_pytest("looping_update_status.py")
    assert proc.returncode == 1
    module = "tests/bad_impls/looping_update_status.py"
    assert re.search(
        rf"failed-resurrect/story on {module}: unknown: hit its time bound \(3 s\) in scenario, "
        rf"main thread at {module}:1[01] in update_status",  # line 10 or 11: where the loop was
        proc.stdout,
    )
    assert re.search(r"\b[1-9][0-9]* failed, 1 passed\b", proc.stdout)  # task-refs never calls it


def test_an_import_that_hangs_stops_the_session_with_one_line():
    proc = run_pytest("hangs_at_import.py")
    assert proc.returncode == 4  # pytest's usage error
    assert proc.stderr.strip().splitlines() == [
        "ERROR: --impl module 'tests/bad_impls/hangs_at_import.py' hit its time bound (3 s) in import, "
        "main thread at tests/bad_impls/hangs_at_import.py:5 in <module>"
    ]
