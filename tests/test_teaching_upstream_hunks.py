"""Upstream's own hunk per fix lesson (reference/teaching/upstream_hunks.py), read from the wheels."""

from __future__ import annotations

import difflib
import re
import zipfile

import pytest
from upstream_wheels import wheel

from reference.teaching import upstream_hunks as uh

# One line each fix added, as the first release with it has it.
ADDED = {
    "failed-resurrect": "+            if status == KVPoll.Failed:",
    "live-set-race": "+            possible_affected_rooms = list(",
    "stale-bootstrap": "+        self.invalidate_cached_bootstrap_infos()",
    "task-refs": "+            cleanup_task = self._loop.create_task(self._cleanup_expired_entries())",
}


def _needs_wheels(lesson: str) -> uh.Fix:
    fix = uh.FIXES[lesson]
    wheel(fix.before), wheel(fix.after)  # skips (or fails under ci/upstream.sh) when one is absent
    return fix


@pytest.mark.parametrize("lesson", sorted(ADDED))
def test_the_hunk_shows_a_line_the_fix_added_under_a_header_linking_the_pr(lesson):
    fix = _needs_wheels(lesson)
    text = str(uh.upstream_hunks(lesson))
    head = text.splitlines()[0]
    link = f"https://github.com/sgl-project/sglang/pull/{fix.pr}"
    assert head == f"Upstream's fix {link}: sglang {fix.before} -> {fix.after}"
    assert ADDED[lesson] in text.splitlines()
    assert text == str(uh.upstream_hunks(lesson)), "two calls give the same text"


@pytest.mark.parametrize("lesson", sorted(ADDED))
def test_hunk_headers_give_the_line_numbers_of_the_released_file(lesson):
    fix = _needs_wheels(lesson)
    lines = str(uh.upstream_hunks(lesson)).splitlines()
    checked = 0
    with zipfile.ZipFile(wheel(fix.after)) as archive:
        for i, line in enumerate(lines):
            match = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)", line)
            if not match:
                continue
            file = next(x for x in reversed(lines[:i]) if x.startswith("+++ ")).split()[1]
            released = archive.read(file.split("/", 1)[1]).decode().splitlines()
            at = int(match.group(1))
            for body in lines[i + 1 :]:
                if body.startswith(("@@", "--- ")):
                    break
                if not body.startswith("-"):
                    assert released[at - 1] == body[1:], f"{file}:{at}"
                    at, checked = at + 1, checked + 1
    assert checked > 0


def test_a_method_that_did_not_change_is_left_out(monkeypatch):
    fix = _needs_wheels("live-set-race")
    same = uh.Fix(fix.pr, fix.after, fix.after, fix.touched)
    monkeypatch.setitem(uh.FIXES, "live-set-race", same)
    text = str(uh.upstream_hunks("live-set-race"))
    assert "common/conn.py" in text and "--- " not in text and "@@" not in text


def test_without_wheels_one_line_says_how_to_fetch_them_and_links_the_pr(monkeypatch, tmp_path):
    monkeypatch.setenv("SGLANG_WHEELS", str(tmp_path))
    text = str(uh.upstream_hunks("task-refs"))
    assert len(text.splitlines()) == 1
    assert "bash ci/upstream.sh --fetch-only" in text
    assert "https://github.com/sgl-project/sglang/pull/33048" in text
    assert "<pre" in uh.upstream_hunks("task-refs")._repr_html_()


def test_a_lesson_without_an_upstream_fix_is_a_clear_error():
    with pytest.raises(ValueError, match="no upstream fix for lesson 'room-reuse'"):
        uh.upstream_hunks("room-reuse")


@pytest.mark.parametrize("lesson", sorted(uh.OTHERS))
def test_lines_left_out_are_other_changes_of_the_release_and_shown_nowhere(lesson):
    fix = _needs_wheels(lesson)
    old, new = (uh._methods(wheel(v), tuple(fix.touched.split())) for v in (fix.before, fix.after))
    text = str(uh.upstream_hunks(lesson)).splitlines()
    for key, others in uh.OTHERS[lesson].items():
        a, b = old[key][2], new[key][2]
        changed = {line[1:].strip() for line in difflib.unified_diff(a, b, lineterm="") if line[:1] in "+-"}
        assert set(others) <= changed, f"{key}: not a changed line of the release: {set(others) - changed}"
        start = text.index(f"--- {old[key][0]} {key}")
        end = next((i for i in range(start + 2, len(text)) if text[i].startswith("--- ")), len(text))
        shown = {line[1:].strip() for line in text[start + 2 : end] if line[:1] in "+-"}
        assert not shown & set(others), f"{key}: another PR's line still shown: {shown & set(others)}"
        assert any(line.startswith("(left out: ") for line in text[start:end])
