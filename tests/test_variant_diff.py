"""`diff reference/buggy reference/fixed` must be exactly the tagged upstream fixes, and
`diff reference/fixed reference/hardened` exactly the tagged hardening.

Every buggy/fixed hunk's removed lines carry `# BUG(<lesson>)` and its added lines
`# FIX(<lesson>)`; every fixed/hardened hunk's added lines carry `# HARDEN(<lesson>)`
(its removed lines are fixed's code, and a hunk that only removes must say why with an
added tagged line), with a lesson id that exists. The check itself is tested on made-up
untagged diffs.
"""

import difflib
import re
from pathlib import Path

import pytest

from reference.harness.lesson import LESSON_IDS

ROOT = Path(__file__).resolve().parents[1] / "reference"
TAG = re.compile(r"# (BUG|FIX)\(([a-z-]+)\)")
HARDEN = re.compile(r"# HARDEN\(([a-z-]+)\)")


def hunks(old: list[str], new: list[str]) -> list[tuple[list[str], list[str]]]:
    found = []
    for group in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_grouped_opcodes(0):
        removed = [line for op, i1, i2, _, _ in group if op != "equal" for line in old[i1:i2]]
        added = [line for op, _, _, j1, j2 in group if op != "equal" for line in new[j1:j2]]
        found.append((removed, added))
    return found


def untagged(removed: list[str], added: list[str]) -> list[str]:
    problems = []
    for side, lines, kind in (("-", removed, "BUG"), ("+", added, "FIX")):
        tags = [m for line in lines for m in TAG.finditer(line)]
        if lines and not any(m.group(1) == kind and m.group(2) in LESSON_IDS for m in tags):
            problems.append(f"{side} lines lack a {kind}(<lesson>) tag: {lines[0].strip()!r}")
    return problems


def variant_files() -> list[str]:
    names = {p.name for p in (ROOT / "buggy").glob("*.py")} | {p.name for p in (ROOT / "fixed").glob("*.py")}
    return sorted(names)


@pytest.mark.parametrize("name", variant_files())
def test_every_hunk_is_tagged(name):
    old = (ROOT / "buggy" / name).read_text().splitlines()
    new = (ROOT / "fixed" / name).read_text().splitlines()
    problems = [p for removed, added in hunks(old, new) for p in untagged(removed, added)]
    assert not problems, f"{name}: " + "; ".join(problems)


def test_each_lesson_in_the_diff_has_both_tags():
    text = "".join((ROOT / v / n).read_text() for v in ("buggy", "fixed") for n in variant_files())
    tagged = {(m.group(1), m.group(2)) for m in TAG.finditer(text)}
    for kind, lesson in tagged:
        assert ("FIX" if kind == "BUG" else "BUG", lesson) in tagged


def test_the_check_catches_an_untagged_hunk():
    old = ["x = 1", "keep", "y = 2  # BUG(live-set-race): live", "z = 3"]
    new = ["x = 10", "keep", "y = list(2)  # FIX(live-set-race): snapshot", "z = 3"]
    problems = [p for removed, added in hunks(old, new) for p in untagged(removed, added)]
    assert problems == [
        "- lines lack a BUG(<lesson>) tag: 'x = 1'",
        "+ lines lack a FIX(<lesson>) tag: 'x = 10'",
    ]


def test_the_check_rejects_an_unknown_lesson_id():
    assert untagged(["a  # BUG(no-such-lesson): x"], ["b  # FIX(no-such-lesson): y"])


# -- fixed -> hardened --
def unhardened(removed: list[str], added: list[str]) -> list[str]:
    tags = [m.group(1) for line in added for m in HARDEN.finditer(line)]
    if not any(tag in LESSON_IDS for tag in tags):
        first = (added or removed or [""])[0].strip()
        return [f"hunk lacks a HARDEN(<lesson>) tag on its added lines: {first!r}"]
    return []


def hardened_files() -> list[str]:
    return sorted(
        {p.name for p in (ROOT / "fixed").glob("*.py")} | {p.name for p in (ROOT / "hardened").glob("*.py")}
    )


def test_hardened_has_the_same_modules_as_fixed():
    assert {p.name for p in (ROOT / "hardened").glob("*.py")} == {
        p.name for p in (ROOT / "fixed").glob("*.py")
    }


@pytest.mark.parametrize("name", hardened_files())
def test_every_hardening_hunk_is_tagged(name):
    old = (ROOT / "fixed" / name).read_text().splitlines()
    new = (ROOT / "hardened" / name).read_text().splitlines()
    problems = [p for removed, added in hunks(old, new) for p in unhardened(removed, added)]
    assert not problems, f"{name}: " + "; ".join(problems)


def test_hardened_keeps_every_fix_tag():
    """Hardening builds on the upstream fixes: each FIX tag of fixed/ is still in hardened/."""
    for name in hardened_files():
        fixed = set(TAG.findall((ROOT / "fixed" / name).read_text()))
        hardened = set(TAG.findall((ROOT / "hardened" / name).read_text()))
        assert fixed <= hardened, f"{name}: hardened dropped {sorted(fixed - hardened)}"


def test_the_hardening_check_catches_untagged_and_unknown_hunks():
    old = ["keep", "x = 1", "end"]
    assert unhardened(*hunks(old, ["keep", "x = 2", "end"])[0]) == [
        "hunk lacks a HARDEN(<lesson>) tag on its added lines: 'x = 2'"
    ]
    assert unhardened(["x = 1"], ["x = 2  # HARDEN(no-such-lesson): y"])
    assert unhardened(["x = 1"], []), "a bare removal is a hunk too"
    assert not unhardened(["x = 1"], ["x = 2  # HARDEN(room-reuse): why"])
