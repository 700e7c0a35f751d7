"""The committed version matrix (`reference/upstream/VERSIONS.md`) says what a fresh run
says, for the releases CI has, on the four fixes' lessons and on what they leave open;
the newest release is `ok` on every fix lesson."""

import re
import subprocess
import sys

import pytest
from upstream_wheels import NEWEST, ROOT, VERSIONS, wheel

from reference.harness.lesson import Options, run_lesson
from reference.upstream import load_sglang
from reference.upstream.decides import deciding_line
from reference.upstream.matrix import OUT, fix_lessons, residual_lessons

pytestmark = pytest.mark.upstream
ROW = re.compile(
    r"^\| (?P<version>[\w.]+) \| (?P<lesson>[a-z-]+) \| `(?P<verdict>\w+)`[^|]*\| `\w+` \| (?P<line>.*) \|$"
)


def committed() -> dict[tuple[str, str], tuple[str, str]]:
    rows = (ROW.match(line) for line in OUT.read_text().splitlines())
    return {(m["version"], m["lesson"]): (m["verdict"], m["line"]) for m in rows if m}


@pytest.mark.parametrize("version", VERSIONS)
def test_the_committed_matrix_names_the_lines_a_fresh_load_finds(version):
    table, variant = committed(), load_sglang(str(wheel(version)))
    for lesson in [*fix_lessons(), *residual_lessons()]:
        assert table[(version, lesson.id)][1].startswith(deciding_line(variant.module, lesson.id)), lesson.id


@pytest.mark.parametrize("version", ["0.5.18", NEWEST])  # the other verdicts: test_upstream_fidelity.py
def test_the_committed_matrix_has_a_fresh_runs_verdicts(version):
    table, variant = committed(), load_sglang(str(wheel(version)))
    for lesson in [*fix_lessons(), *residual_lessons()]:
        result = run_lesson(lesson, variant, Options())
        assert result.verdict == table[(version, lesson.id)][0], (lesson.id, result.symptom)


def test_the_newest_release_is_ok_on_every_lesson():
    assert {committed()[(NEWEST, lesson.id)][0] for lesson in fix_lessons()} == {"ok"}
    newest = max((v for v, _ in committed()), key=lambda v: tuple(int(x) for x in v.split(".")[:3]))
    assert newest == NEWEST


def test_the_committed_matrix_has_every_residual_lesson_as_expected():
    rows = [line for line in OUT.read_text().splitlines() if ROW.match(line)]
    residual = {lesson.id for lesson in residual_lessons()}
    assert {ROW.match(row)["lesson"] for row in rows} >= residual  # type: ignore[index]
    assert not [row for row in rows if "(differs)" in row]


def test_cli_provoke_turns_latent_into_bug_and_exits_0():
    command = ["--sglang", str(wheel("0.5.18")), "--provoke", "--lesson", "task-refs", "--verbose"]
    proc = subprocess.run(
        [sys.executable, "-m", "reference", *command], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        "  bug   " in proc.stdout and "(provoked: a tick source that holds its waiters weakly" in proc.stdout
    )
