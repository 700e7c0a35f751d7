"""Every fix hunk is load-bearing: the fixed form with one change reverted to the buggy lines.

`reverts()` reads `diff reference/buggy reference/fixed` module by module (difflib, line
by line) and yields one `Revert` per tagged hunk: the fixed module with that hunk's
lines replaced by the buggy ones. Within a hunk, each `FIX(<lesson>)`-tagged line of
the fixed side that can be dropped alone (the module still parses) is a revert of its
own. `build(revert, folder)` writes the fixed package with that one module changed to
`folder` and loads it as a variant (`reference.variants.load_impl`), which the lessons
and the explorations then judge: every revert must come out `bug` (tests/test_reverts.py).
"""

from __future__ import annotations

import ast
import difflib
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from reference.variants import Variant, load_impl

PACKAGE = Path(__file__).resolve().parents[1]
BUGGY, FIXED = PACKAGE / "buggy", PACKAGE / "fixed"
TAG = re.compile(r"#\s*(?:FIX|BUG)\(([a-z-]+)\)")


@dataclass(frozen=True)
class Revert:
    id: str  # "module: what the FIX comment says", e.g. "receiver: on fetch failure"
    lesson: str
    module: str  # file name in reference/fixed
    fixed_lines: tuple[int, int]  # 1-based, inclusive-exclusive range of fixed lines replaced
    source: str  # the module's text with this change reverted
    summary: str  # the fixed lines reverted, first one, stripped

    @property
    def name(self) -> str:
        return "revert_" + re.sub(r"\W+", "_", self.id).strip("_")


def _lesson(lines: list[str]) -> str | None:
    for line in lines:
        match = TAG.search(line)
        if match:
            return match[1]
    return None


def _says(lines: list[str]) -> str:
    """What the first FIX comment of `lines` says (the hunk's name), else its first code."""
    for line in lines:
        if "FIX(" in line and ":" in line.split("FIX(", 1)[1]:
            return line.split("FIX(", 1)[1].split(":", 1)[1].strip().rstrip(".")
    return next((_code(line) for line in lines if _code(line)), "?")


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


# Hunks that only make sense reverted together (the second uses a name the first defines).
LINKED = {"receiver: one locked lookup": "receiver: the object looked up under the lock"}


def reverts(buggy: Path = BUGGY, fixed: Path = FIXED) -> list[Revert]:
    found: list[Revert] = []
    for fixed_file in sorted(fixed.glob("*.py")):
        old = (buggy / fixed_file.name).read_text().splitlines(keepends=True)
        new = fixed_file.read_text().splitlines(keepends=True)
        found += _module_reverts(fixed_file.name, old, new)
        for first, second in LINKED.items():
            hunks = _hunks(old, new)
            named = {_hunk_id(fixed_file.name, hunk, new, old): hunk for hunk in hunks}
            if first in named and second in named:
                both = sorted(named[first] + named[second], key=lambda change: change[2])
                found.append(
                    _revert(f"{first} + {second.split(': ', 1)[1]}", fixed_file.name, both, old, new)
                )
    return found


def _hunk_id(module: str, hunk: list[tuple[int, int, int, int]], new: list[str], old: list[str]) -> str:
    new_lines = [line for _, _, k1, k2 in hunk for line in new[k1:k2]]
    old_lines = [line for i1, i2, _, _ in hunk for line in old[i1:i2]]
    return f"{module.removesuffix('.py')}: {_says(new_lines or old_lines)}"


def _revert(
    rid: str, module: str, hunk: list[tuple[int, int, int, int]], old: list[str], new: list[str]
) -> Revert:
    new_lines = [line for _, _, k1, k2 in hunk for line in new[k1:k2]]
    old_lines = [line for i1, i2, _, _ in hunk for line in old[i1:i2]]
    text = list(new)
    for i1, i2, k1, k2 in reversed(hunk):  # from the bottom, so earlier indexes hold
        text[k1:k2] = old[i1:i2]
    lesson = _lesson(new_lines) or _lesson(old_lines) or "untagged"
    lines = (hunk[0][2] + 1, hunk[-1][3] + 1)
    first = next((line.strip() for line in new_lines + old_lines if line.strip()), "")
    return Revert(rid, lesson, module, lines, "".join(text), first)


def _code(line: str) -> str:
    return line.split("#", 1)[0].strip()


def _hunks(old: list[str], new: list[str]) -> list[list[tuple[int, int, int, int]]]:
    """The diff's changes, a line moved a short way (deleted, re-added) counted as one."""
    changes = [op[1:] for op in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
               if op[0] != "equal"]  # fmt: skip
    hunks: list[list[tuple[int, int, int, int]]] = []
    for change in changes:
        if hunks and _moved(hunks[-1][-1], change, old, new):
            hunks[-1].append(change)
        else:
            hunks.append([change])
    return hunks


def _moved(
    first: tuple[int, int, int, int], second: tuple[int, int, int, int], old: list[str], new: list[str]
) -> bool:
    deleted, added = old[first[0] : first[1]], new[second[2] : second[3]]
    near = second[2] - first[3] <= 2
    return (
        near
        and first[2] == first[3]
        and second[0] == second[1]
        and [*map(_code, deleted)] == [*map(_code, added)]
    )


def _module_reverts(module: str, old: list[str], new: list[str]) -> Iterator[Revert]:
    seen: dict[str, int] = {}
    for hunk in _hunks(old, new):
        rid = _hunk_id(module, hunk, new, old)
        seen[rid] = seen.get(rid, 0) + 1
        rid = rid if seen[rid] == 1 else f"{rid} #{seen[rid]}"
        yield _revert(rid, module, hunk, old, new)
        j1, j2 = hunk[0][2], hunk[-1][3]
        tagged = [j for j in range(j1, j2) if "FIX(" in new[j] and TAG.search(new[j]) and _code(new[j])]
        if len(tagged) < 2:
            continue
        for j in tagged:  # one tagged line dropped alone, where that still parses
            single = "".join(new[:j] + new[j + 1 :])
            if _parses(single):
                lesson = _lesson([new[j]]) or "untagged"
                yield Revert(f"{rid} / line {j + 1}", lesson, module, (j + 1, j + 2), single, new[j].strip())


def build(revert: Revert, folder: Path) -> Variant:
    """The fixed package with `revert` applied, written under `folder` and loaded."""
    return build_variant(revert.id, revert.name, revert.module, revert.source, folder)


def build_variant(label: str, name: str, module: str, source: str, folder: Path) -> Variant:
    """The fixed package with `module` replaced by `source`, as package `name` under `folder`."""
    target = folder / name
    shutil.copytree(FIXED, target, ignore=shutil.ignore_patterns("__pycache__"))
    (target / module).write_text(source)
    variant = load_impl(str(target))
    return Variant(label, variant.module, "bug")
