"""`ci/flake.sh N`: it must name a test that failed in some runs by its id and count, keep
the logs of the failed runs, pass a stable suite, and refuse a bad run count."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLAKY = """
from pathlib import Path

RUNS = Path(__file__).with_name("runs")

def test_stable():
    pass

def test_fails_in_the_first_run_only():
    RUNS.write_text(RUNS.read_text() + "x" if RUNS.exists() else "x")
    assert RUNS.read_text() != "x", "first run"
"""


def _flake(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_flaky.py").write_text(FLAKY)
    return subprocess.run(
        ["bash", "ci/flake.sh", *args], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHON": sys.executable},
    )  # fmt: skip


def _suite(tmp_path: Path, *only: str) -> list[str]:
    ids = [f"{tmp_path}/test_flaky.py{name}" for name in only] or [str(tmp_path / "test_flaky.py")]
    quiet = ["-p", "no:cacheprovider", "-p", "no:nbmake", "-p", "no:schemathesis"]  # costly plugins
    return [*ids, "-c", str(tmp_path / "pytest.ini"), *quiet]


def test_a_flaky_test_is_named_with_its_count_and_its_log_kept(tmp_path):
    result = _flake(tmp_path, "3", *_suite(tmp_path))
    kept = re.search(r"logs of the failed runs: (\S+)", result.stdout)
    try:
        assert result.returncode == 1, result.stdout + result.stderr
        assert re.search(r"^run 1/3: FAILED .*1 failed, 1 passed", result.stdout, re.M)
        assert "run 2/3: passed" in result.stdout and "run 3/3: passed" in result.stdout
        assert re.search(r"^1/3 \S*test_flaky\.py::test_fails_in_the_first_run_only$", result.stdout, re.M)
        assert "test_stable" not in result.stdout
        assert kept and "first run" in (Path(kept[1]) / "run1.log").read_text()
        assert not (Path(kept[1]) / "run2.log").exists()  # a passing run's log is not kept
    finally:
        if kept:
            shutil.rmtree(kept[1], ignore_errors=True)


def test_a_stable_suite_passes_and_leaves_nothing(tmp_path):
    result = _flake(tmp_path, "2", *_suite(tmp_path, "::test_stable"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "no failures in 2 run(s)"
    assert "logs of the failed runs" not in result.stdout


def test_a_bad_run_count_is_refused_in_one_line(tmp_path):
    for bad in ("", "0", "-3", "x"):
        result = _flake(tmp_path, bad)
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.startswith("ci/flake.sh: error: expected a number of runs")
        assert len(result.stderr.splitlines()) == 1
