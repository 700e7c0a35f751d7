"""The fix as a diff, read from the files themselves.

`reference/buggy/X.py` and `reference/fixed/X.py` share their line structure, so
their unified diff is exactly the upstream fix. Every hunk carries `# BUG(<lesson>)`
on its removed lines and `# FIX(<lesson>)` on its added ones (tests/test_variant_diff.py
enforces it), which lets a notebook show only the hunks of its own lesson.
"""

from __future__ import annotations

import difflib
import html
import re
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
TAG = re.compile(r"# (?:BUG|FIX)\(([a-z-]+)\)")


@dataclass(frozen=True)
class Hunk:
    """One hunk of one variant file, with the lessons its tags name."""

    file: str
    lines: tuple[str, ...]  # the "@@" header first, then " ", "-", "+" lines

    @property
    def lessons(self) -> frozenset[str]:
        return frozenset(m.group(1) for line in self.lines for m in TAG.finditer(line))


@dataclass(frozen=True)
class FixDiff:
    """The hunks of one lesson (or all of them); prints as `diff -u`, shows coloured in Jupyter."""

    lesson: str | None
    hunks: tuple[Hunk, ...]

    @property
    def files(self) -> list[str]:
        return sorted({hunk.file for hunk in self.hunks})

    def text(self) -> str:
        out: list[str] = []
        for name in self.files:
            out += [f"--- reference/buggy/{name}", f"+++ reference/fixed/{name}"]
            out += [line for hunk in self.hunks if hunk.file == name for line in hunk.lines]
        return "\n".join(out)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        rows = [_html_row(line) for line in self.text().splitlines()]
        return f'<pre style="font-size:12px;line-height:1.35">{"".join(rows)}</pre>'


def _html_row(line: str) -> str:
    # translucent tints over the theme's own background and text colour: readable in a light
    # and in a dark Jupyter theme alike (an opaque pale tint under a dark theme's white text is not)
    colours = {
        "-": "rgba(229, 57, 53, 0.18)",
        "+": "rgba(67, 160, 71, 0.20)",
        "@": "rgba(30, 136, 229, 0.15)",
    }
    text = html.escape(line) or "&nbsp;"
    if line.startswith(("--- ", "+++ ")):
        return f"<div><b>{text}</b></div>"
    return f'<div style="background:{colours.get(line[:1], "none")}">{text}</div>'


def variant_files(root: Path = PACKAGE) -> list[str]:
    names = {p.name for side in ("buggy", "fixed") for p in (root / side).glob("*.py")}
    return sorted(names - {"__init__.py"})


def _read(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def file_hunks(name: str, root: Path = PACKAGE, context: int = 3) -> list[Hunk]:
    old, new = _read(root / "buggy" / name), _read(root / "fixed" / name)
    hunks: list[Hunk] = []
    body = list(difflib.unified_diff(old, new, n=context, lineterm=""))[2:]  # drop ---/+++ lines
    for line in body:
        if line.startswith("@@"):
            hunks.append(Hunk(name, (line,)))
        else:
            hunks[-1] = Hunk(name, (*hunks[-1].lines, line))
    return hunks


def fix_diff(lesson: str | None = None, root: Path = PACKAGE, context: int = 3) -> FixDiff:
    """The hunks tagged with `lesson` (every hunk when None), across all variant files."""
    hunks = [h for name in variant_files(root) for h in file_hunks(name, root, context)]
    if lesson is not None:
        hunks = [h for h in hunks if lesson in h.lessons]
        if not hunks:
            raise ValueError(f"no hunk of reference/buggy -> reference/fixed is tagged {lesson!r}")
    return FixDiff(lesson, tuple(hunks))
