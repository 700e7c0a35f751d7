"""`pytest --impl PATH` for a copy of the learners' template outside the checkout.

pytest takes a path after `--impl` (with a space) for a test path when it looks for its
configuration, so from a folder outside the checkout it would miss the checkout's
`pyproject.toml` and stop with "unrecognized arguments: --impl". The template's
`conftest.py` runs the command again from the checkout as `--impl=PATH`. Here: the real
command on a real copy (the lesson's tests run, and fail, as the template is the buggy
form), and the argument rewriting on its own.
"""

import importlib.util
import shutil
from pathlib import Path

from sessions import run_in_session

from reference.lessons import LESSONS

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "notebooks" / "exercises" / "my_fix"


def _conftest():
    spec = importlib.util.spec_from_file_location("my_fix_conftest", TEMPLATE / "conftest.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_arguments_are_rewritten_for_the_checkout(tmp_path):
    (tmp_path / "my_fix").mkdir()
    args = ["--impl", "my_fix", "-m", "lesson(id='task-refs')", "--impl-timeout", "30", "-q"]
    assert _conftest().rewritten(args, tmp_path) == [
        f"--impl={tmp_path / 'my_fix'}",
        "-m",
        "lesson(id='task-refs')",
        "--impl-timeout=30",
        "-q",
    ]


def test_pytest_impl_with_a_space_runs_the_lesson_on_a_copy_outside(tmp_path):
    copy = tmp_path / "my_fix"
    shutil.copytree(TEMPLATE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    lesson = "failed-resurrect"
    args = ["-m", "pytest", "--impl", str(copy), "-m", f"lesson(id='{lesson}')", "-p", "no:randomly", "-q"]
    proc, left = run_in_session(args, timeout=120)
    assert not left, f"left running: {left}"
    assert "unrecognized arguments" not in proc.stderr
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]  # tests ran; some failed
    checks = [c.id for c in LESSONS[lesson].checklist("mock")]
    assert f"test_check_holds[{lesson}/{checks[0]}]" in proc.stdout  # the buggy template fails it
    assert " passed" in proc.stdout and " failed" in proc.stdout
