"""`reference.teaching.hardened` (notebook 06): the HARDEN diff per lesson, the live status
rules, the restart-recovery numbers and picture, upstream methods read from wheels, and the
exercise checker that hardens `reference.fixed`."""

import difflib
import re
import zipfile

import pytest

import reference.fixed
import reference.hardened
from reference.teaching import hardened, plots
from reference.variants import RESIDUAL_LESSON_IDS

PNG = b"\x89PNG\r\n\x1a\n"
HEADER = re.compile(r"@@ -(\d+),(\d+) \+(\d+),(\d+) @@")
TAGGED = (*RESIDUAL_LESSON_IDS, "stale-bootstrap")  # stale-bootstrap: the cache hit's cost


def _changed_lines(name: str) -> list[str]:
    old = (hardened.PACKAGE / "fixed" / name).read_text().splitlines()
    new = (hardened.PACKAGE / "hardened" / name).read_text().splitlines()
    body = list(difflib.unified_diff(old, new, n=0, lineterm=""))[2:]
    return [line for line in body if line[:1] in "+-"]


def test_every_changed_line_is_in_some_lessons_diff_and_each_piece_is_tagged():
    shown = [line for lesson in TAGGED for line in hardened.harden_diff(lesson).text().splitlines()]
    for name in hardened.FILES:
        for line in _changed_lines(name):
            assert line in shown, f"{name}: {line!r} is in no lesson's HARDEN diff"
        for piece in hardened.file_pieces(name):
            assert piece.lessons, f"{name}: an untagged piece {piece.lines[:2]}"
            assert piece.lessons <= set(TAGGED), piece.lessons


def test_each_piece_header_points_at_its_lines_in_both_files():
    for name in hardened.FILES:
        old = (hardened.PACKAGE / "fixed" / name).read_text().splitlines()
        new = (hardened.PACKAGE / "hardened" / name).read_text().splitlines()
        for piece in hardened.file_pieces(name):
            header = HEADER.match(piece.lines[0])
            assert header, piece.lines[0]
            a, a_len, b, b_len = map(int, header.groups())
            body = piece.lines[1:]
            assert [x[1:] for x in body if x[:1] in " -"] == old[a - 1 : a - 1 + a_len]
            assert [x[1:] for x in body if x[:1] in " +"] == new[b - 1 : b - 1 + b_len]


def test_a_lessons_diff_shows_its_own_methods_only():
    reuse = hardened.harden_diff("room-reuse").text()
    assert "def _open_lifecycle" in reuse and "def abort" in reuse
    assert "def _on_peer_gone" not in reuse and "def _cleanup_room_tracking" not in reuse
    tracker = hardened.harden_diff("stale-tracker")
    assert tracker.text().startswith("--- reference/fixed/manager.py\n+++ reference/hardened/manager.py\n@@")
    assert "background:rgba(67, 160, 71, 0.20)" in tracker._repr_html_()  # a tint a dark theme reads
    with pytest.raises(ValueError, match="tagged 'no-such-lesson'"):
        hardened.harden_diff("no-such-lesson")


def test_status_rules_are_the_managers_own():
    rows = [line.split("  ") for line in hardened.status_rules().splitlines()]
    cells = [[c.strip() for c in row if c.strip()] for row in rows]
    assert cells[0] == ["writes to room 7", "buggy", "fixed", "hardened"]
    assert cells[1][1:] == ["Failed", "absent", "absent"], "a late Failed: #24539 stops it"
    assert cells[2][1:] == ["Success", "Success", "absent"], "only an opening status creates a room"
    assert cells[3][1:] == ["Transferring", "Transferring", "Failed"], "Failed is terminal"


def test_steps_print_each_forms_detail_per_step():
    from reference.teaching import runs

    text = hardened.steps(runs.run_all("stale-tracker", hardened.VARIANTS)).splitlines()
    assert text[0] == "t=10  first failure handled" and text[1] == "    all forms: room 101 Failed"
    assert "    fixed:    room 202 WaitingForInput" in text and "    hardened: room 202 Failed" in text
    with pytest.raises(ValueError, match="different steps"):
        hardened.steps(runs.run_all("restart-recovery", hardened.VARIANTS))


def _run(stale, first, down=0, after=0, registered=0.9):
    return {"stale_failures": stale, "failed_while_down": down, "failed_after_registered": after,
            "first_success_after_registered_s": first, "registered_after_s": registered}  # fmt: skip


RECOVERY = {
    "mode": "test",
    "sweeps": [
        {
            "sockets": "upstream (IMMEDIATE=0, SNDTIMEO 1 s)",
            "variants": {
                "buggy": {"runs": [_run(20, "never", after=5), _run(22, "never", after=6)]},
                "fixed": {"runs": [_run(4, 0.019), _run(3, 0.075)]},
                "hardened": {"runs": [_run(0, 0.011, down=8, registered=1.7), _run(0, "never", down=24)]},
            },
        }
    ],
}


def test_recovery_table_shows_every_repetition():
    rows = hardened.recovery_table(RECOVERY).splitlines()
    assert rows[0].split("  ")[0] == "sockets" and rows[0].endswith("first success after it, ms")
    assert rows[1].split()[-9:] == ["buggy", "0.9", "0.9", "20", "22", "5", "6", "never", "never"]
    assert rows[2].split()[-6:] == ["4", "3", "0", "0", "19", "75"]
    assert rows[3].split()[-8:-6] == ["1.7", "0.9"] and rows[3].split()[-2:] == ["11", "never"]
    assert hardened.median_first_success_ms(RECOVERY, "fixed") == 47.0
    assert hardened.median_first_success_ms(RECOVERY, "hardened") == 11.0
    assert hardened.median_first_success_ms(RECOVERY, "buggy") is None


def test_set_up_lines_come_from_the_run_itself():
    setup = hardened.recovery_setup({"mode": "m", "config": {"receivers": 3, "waiting_timeout_s": 2.0}})
    assert setup.startswith("m run: 3 decode ranks at ? requests/s each;") and "waiting timeout 2.0" in setup
    overhead = {"pairs": [{"case": "receiver set-up on a miss (loopback)", "buggy": {"ns_per_op": 2.5e7},
                           "fixed": {"ns_per_op": 3e6}}]}  # fmt: skip
    assert hardened.miss_setup_ms(overhead) == {"buggy": 25.0, "fixed": 3.0}
    assert hardened.miss_setup_ms({"pairs": []}) == {}


def test_recovery_picture_marks_never_medians_and_the_target():
    pytest.importorskip("matplotlib", reason="plots need the `notebooks` extra (matplotlib)")
    picture = hardened.recovery_picture(RECOVERY)
    assert picture.png().startswith(PNG)
    texts = picture.texts()
    assert "never in\n2 of 2" in texts, "buggy never recovered"
    assert "never in\n1 of 2" in texts, "one hardened run never did"
    assert {"should be 0", "hardened target: 10 ms", "median 47"} <= set(texts)
    assert (
        repr(picture)
        == "Picture('Restart recovery, the committed benchmark run (test): one dot per repetition')"
    )


def test_runs_picture_uses_the_variant_colours():
    pytest.importorskip("matplotlib", reason="plots need the `notebooks` extra (matplotlib)")
    import numpy as np

    panel = plots.RunsPanel(
        "p", "y", {"fixed": [1.0, 3.0], "hardened": [None]}, should_be=0.0, should_label="zero"
    )
    picture = plots.runs_picture([[panel]], "t")
    drawn = [line for ax in picture.figure.axes for line in ax.get_lines()]
    colours = {line.get_color() for line in drawn if np.asarray(line.get_xdata()).size}
    assert colours == {plots.COLOURS["fixed"]}, "dots only for runs that got there, in the variant's colour"
    assert {"median 2", "never in\n1 of 1", "zero"} <= set(picture.texts())


def test_hardened_targets_keep_the_recorded_numbers():
    summary = {
        "targets": [
            {"id": "recovery", "target": "fixed", "met": True, "measured": "x"},
            {
                "id": "hardened-recovery",
                "target": "first success <= 10 ms",
                "met": False,
                "measured": "23 ms",
            },
        ]
    }
    text = hardened.hardened_targets(summary)
    assert "fixed" not in text.split("\n")[0]
    assert "first success <= 10 msec" in text and "measured: 23 msec" in text and "MISSED" in text


def _wheel(folder, version, source):
    path = folder / f"sglang-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("sglang/srt/disaggregation/common/conn.py", source)
    return path


def test_upstream_change_reads_methods_from_wheels(tmp_path, monkeypatch):
    monkeypatch.setenv("SGLANG_WHEELS", str(tmp_path))
    missing = str(hardened.upstream_change("A.f", "9.0.1", "9.0.2"))
    assert (
        "bash ci/upstream.sh --fetch-only" in missing and "https://pypi.org/project/sglang/9.0.1/" in missing
    )
    _wheel(
        tmp_path,
        "9.0.1",
        "x = 1\n\nclass A:\n    def f(self):\n        return 1\n\n    def g(self):\n        pass\n",
    )
    _wheel(
        tmp_path, "9.0.2", "class A:\n    def f(self):\n        return 2\n\n    def g(self):\n        pass\n"
    )
    changed = str(hardened.upstream_change("A.f", "9.0.1", "9.0.2")).splitlines()
    assert "@@ -4,2 +2,2 @@" in changed, "hunk headers count the file's lines"
    assert "-        return 1" in changed and "+        return 2" in changed
    assert "unchanged; in 9.0.2 at sglang/srt/disaggregation/common/conn.py:5:" in str(
        hardened.upstream_change("A.g", "9.0.1", "9.0.2")
    )
    assert "absent from both" in str(hardened.upstream_change("B.h", "9.0.1", "9.0.2"))


def test_exercise_checker_fills_in_the_fixed_form():
    mine = type("KVManager", (reference.fixed.KVManager,), {})
    variant = hardened.variant_from({"KVManager": mine, "KVReceiver": "not a class"})
    assert variant.KVManager is mine and variant.KVReceiver is reference.fixed.KVReceiver
    report = hardened.check_fix("failure-records", variant)
    assert report.written == ("KVManager",) and report.verdict == "bug"
    assert "your classes: KVManager." in str(report) and "failure_records 400" in str(report)
    nothing = hardened.check_fix("failure-records", hardened.variant_from({}))
    assert nothing.written == () and "none (all of reference.fixed)" in str(nothing)
    whole = hardened.check_fix("failure-records", reference.hardened)
    assert whole.verdict == "ok" and "OK      story" in str(whole)
