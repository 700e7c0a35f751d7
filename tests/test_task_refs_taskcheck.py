"""The dangling-task checker, the ratchet on `reference/`, and ruff's RUF006 in lint."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reference.aioloop import pending_tasks
from reference.lessons.task_refs.taskcheck import scan_paths, scan_source

pytestmark = pytest.mark.lesson(id="task-refs")

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "reference"

DISCARDED = """
import asyncio
from asyncio import ensure_future

async def main(loop, coro):
    asyncio.create_task(coro)
    _ = asyncio.ensure_future(coro)
    loop.create_task(coro)
    ensure_future(coro)
    _: asyncio.Task = asyncio.get_running_loop().create_task(coro)
"""

HELD = """
import asyncio

async def main(loop, coro, tasks):
    task = asyncio.create_task(coro)
    await asyncio.create_task(coro)
    tasks.add(loop.create_task(coro))
    self.task = asyncio.ensure_future(coro)
    async with asyncio.TaskGroup() as tg:
        tg.create_task(coro)
    return asyncio.create_task(coro)
"""


def test_finds_discarded_results_with_line_and_call():
    found = [(f.line, f.call) for f in scan_source(DISCARDED, "x.py")]
    assert found == [
        (6, "asyncio.create_task"),
        (7, "asyncio.ensure_future"),
        (8, "loop.create_task"),
        (9, "ensure_future"),
        (10, "asyncio.get_running_loop().create_task"),
    ]
    assert str(scan_source(DISCARDED, "x.py")[0]).startswith(
        "x.py:6:5: asyncio.create_task() result discarded"
    )


def test_held_results_and_task_groups_are_fine():
    assert scan_source(HELD) == []


def test_reports_the_known_sites_in_buggy_each_tagged():
    findings = scan_paths([str(REFERENCE / "buggy")])
    assert {(Path(f.path).name, f.line) for f in findings} >= {
        ("dispatcher.py", 16),
        ("dispatcher.py", 17),
        ("dispatcher.py", 18),
    }
    for finding in findings:
        line = Path(finding.path).read_text().splitlines()[finding.line - 1]
        assert "# BUG(task-refs)" in line, f"{finding}: an untagged bare task in buggy/"


def test_fixed_has_none():
    assert scan_paths([str(REFERENCE / "fixed")]) == []


def test_reference_is_free_of_new_ones_outside_buggy():
    outside = [f for f in scan_paths([str(REFERENCE)]) if Path(f.path).parent.name != "buggy"]
    assert outside == [], "\n".join(map(str, outside))


def run_checker(*paths: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "reference.lessons.task_refs.taskcheck", *paths],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


def test_cli_exit_codes_and_one_line_errors():
    buggy = run_checker("reference/buggy")
    assert (
        buggy.returncode == 1 and "reference/buggy/dispatcher.py:16:9: asyncio.create_task()" in buggy.stdout
    )
    assert run_checker("reference/fixed", "tests").returncode == 0
    missing = run_checker("no/such/path")
    assert missing.returncode == 2
    assert (
        missing.stderr.strip()
        == "python -m reference.lessons.task_refs.taskcheck: error: no such file or directory: no/such/path"
    )


RUFF = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")


@pytest.mark.skipif(RUFF is None, reason="ruff is not installed")
@pytest.mark.parametrize(
    ("where", "flagged"), [("reference/common/x.py", True), ("reference/buggy/x.py", False)]
)
def test_lint_flags_a_bare_create_task_except_in_buggy(where, flagged):
    source = "import asyncio\n\n\nasync def f(c):\n    asyncio.create_task(c)\n"
    proc = subprocess.run(
        [str(RUFF), "check", "--no-cache", "--stdin-filename", where, "-"],
        input=source,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert ("RUF006" in proc.stdout) is flagged, proc.stdout


async def test_pending_tasks_names_what_a_test_would_leave(request):
    assert "no_leaked_tasks" in request.fixturenames, "every async test gets the leak check"
    task = asyncio.create_task(asyncio.sleep(3600))
    await asyncio.sleep(0)
    assert pending_tasks(asyncio.get_running_loop(), exclude=asyncio.current_task()) == ["sleep"]
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


LEAKY_TEST = """
import asyncio


async def test_leaks():
    asyncio.create_task(asyncio.sleep(3600))
    await asyncio.sleep(0)
"""


def test_a_test_ending_with_a_pending_task_fails(tmp_path):
    (tmp_path / "test_leaky.py").write_text(LEAKY_TEST)
    ini = ["-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function"]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "conftest",
            "-p",
            "no:cacheprovider",
            *ini,
            "test_leaky.py",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT)])},
    )
    assert proc.returncode == 1, proc.stdout
    assert "tasks left pending: ['sleep']" in proc.stdout
