"""The verdict table a person reads: 120 columns, a legend for every mark, what `--impl` means.

`reference/harness/table.py` renders it; here on results made up for the purpose (the marks
and the cuts are about text, not about a lesson), then through the CLI on a copy of
`reference/fixed` outside the checkout, which must say that the four fix lessons pass and
gate green with `--lesson fixes`.
"""

import shutil
from pathlib import Path

from reference.cli import main
from reference.harness.result import CheckResult, Result
from reference.harness.table import (
    CUT,
    FIX_LESSONS,
    WIDTH,
    expand_groups,
    format_table,
    impl_summary,
    legend,
    upstream_still_open,
)
from reference.variants import RESIDUAL_LESSON_IDS

ROOT = Path(__file__).resolve().parents[1]
LONG = "8 of 8 cleared rooms came back as Failed; request_status grew with every late abort " * 4


def _result(lesson="failed-resurrect", variant="buggy", verdict="bug", expected="bug", symptom=LONG):
    checks = [CheckResult("story", verdict, symptom)]  # type: ignore[arg-type]
    return Result(lesson, variant, "mock", verdict, expected, symptom, checks=checks)  # type: ignore[arg-type]


def test_table_fits_120_columns_and_marks_a_cut_symptom():
    table = format_table(
        [_result(), _result(variant="fixed", verdict="ok", expected="ok", symptom="all fine")]
    )
    lines = table.splitlines()
    assert max(len(line) for line in lines) <= WIDTH
    assert lines[1].endswith(CUT)
    assert lines[2].endswith("all fine")


def test_verbose_keeps_the_whole_symptom():
    table = format_table([_result()], verbose=True)
    assert " ".join(table.splitlines()[1].split()).endswith(" ".join(LONG.split()))


def test_legend_explains_each_mark_the_table_uses():
    unexpected = _result(verdict="bug", expected="ok")
    text = legend([unexpected, _result(verdict="latent", expected="latent", symptom="short")])
    assert "!" in format_table([unexpected])
    for mark in ("!", CUT.strip(), "checks", "bug", "ok", "latent"):
        assert any(line.split()[0] == mark for line in text.splitlines()[1:]), mark
    assert "unknown" not in text  # a mark the table does not use is not explained
    plain = legend([_result(verdict="ok", expected="ok", symptom="short")])
    assert "!" not in plain.split() and CUT.strip() not in plain.split()


def test_upstream_latest_release_still_fails_six_residual_lessons():
    # reference/upstream/VERSIONS.md, row 0.5.23 of the residual lessons
    still = ["restart-recovery", "room-reuse", "failure-records", "supervised-loops", "late-kv-write",
             "bootstrap-partition"]  # fmt: skip
    assert upstream_still_open() == ("0.5.23", still)


def test_impl_summary_says_the_fix_lessons_pass_and_names_the_residual_ones():
    rows = [_result(i, "my_fix", "ok", "ok", "fine") for i in FIX_LESSONS]
    rows += [_result(i, "my_fix", "bug", "ok", "hole") for i in RESIDUAL_LESSON_IDS]
    text = impl_summary(rows, "my_fix")
    assert "fix lessons: 4 of 4 pass" in text
    residual = len(RESIDUAL_LESSON_IDS)
    assert f"{residual} of {residual} fail" in text and "0.5.23" in text and "--lesson fixes" in text
    assert max(len(line) for line in text.splitlines()) <= WIDTH
    rows[0] = _result(FIX_LESSONS[0], "my_fix", "bug", "ok", "broken")
    assert f"3 of 4 pass; failing: {FIX_LESSONS[0]}" in impl_summary(rows, "my_fix")


def test_lesson_groups_expand_in_order_without_repeats():
    assert expand_groups(["fixes"]) == list(FIX_LESSONS)
    assert expand_groups(["task-refs", "fixes"]) == ["task-refs", *FIX_LESSONS[:3]]
    assert expand_groups(["residual"]) == list(RESIDUAL_LESSON_IDS)


def test_a_copy_of_the_fixed_form_gates_green_on_the_fix_lessons(tmp_path, capsys):
    copy = tmp_path / "upstream_fix"
    shutil.copytree(ROOT / "reference" / "fixed", copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert main(["--impl", str(copy), "--lesson", "fixes", "--quick"]) == 0  # the gate; deep: test_sim
    out = capsys.readouterr().out
    assert "fix lessons: 4 of 4 pass" in out
    assert max(len(line) for line in out.splitlines()) <= WIDTH
    assert main(["--impl", str(copy), "--quick"]) == 1  # the residual lessons: holes upstream's fixes leave
    out = capsys.readouterr().out
    residual = len(RESIDUAL_LESSON_IDS)
    assert "residual lessons" in out and f"{residual} of {residual} fail" in out


def test_explore_of_a_group_keeps_its_explored_lessons(capfd):
    # the residual lessons that have explorations are explored; the explorer runs in a child process
    from reference.explore import PROPERTIES

    assert main(["--explore", "--lesson", "residual"]) == 0
    out = capfd.readouterr().out
    assert "stale-tracker/late-cleanup-keeps-new-set" in out
    rows = {line.split()[0] for line in out.splitlines()[1:] if line.strip()}
    for lesson in RESIDUAL_LESSON_IDS:
        assert (lesson in rows) == (lesson in PROPERTIES), lesson
