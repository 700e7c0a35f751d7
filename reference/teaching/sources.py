"""Real source code, shown in a notebook cell: a scenario's interleaving code, a whole method
before and after its fix.

A notebook cell may not define code (tests/test_notebook_twins.py), so to show the mechanism
it prints the real thing: `inspect.getsource` of the functions a scenario or a check uses to
order two threads, and of a method in `reference/buggy` and `reference/fixed`. Each piece is
headed by its file and first line, so a reader can open it. Nothing here is copied: change
the code and the notebook shows the change on its next run.
"""

from __future__ import annotations

import html
import inspect
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import reference.buggy
import reference.fixed

PACKAGE_ROOT = Path(reference.buggy.__file__).resolve().parents[2]  # the checkout (or site-packages)


@dataclass(frozen=True)
class Piece:
    """One function or class as written: where it is, and its text."""

    where: str  # "reference/lessons/x/y.py:12 Name.method"
    text: str


def piece(obj: Any) -> Piece:
    """`obj`'s source (a function, method or class), dedented, with its file and first line."""
    target = inspect.unwrap(obj)
    lines, first = inspect.getsourcelines(target)
    path = Path(inspect.getsourcefile(target) or "?").resolve()
    shown = path.relative_to(PACKAGE_ROOT) if path.is_relative_to(PACKAGE_ROOT) else path.name
    return Piece(f"{shown}:{first} {target.__qualname__}", textwrap.dedent("".join(lines)).rstrip())


@dataclass(frozen=True)
class Source:
    """Pieces of real source, printed one after the other (plain text and HTML alike)."""

    pieces: tuple[Piece, ...]

    def __repr__(self) -> str:
        return "\n\n".join(f"# {p.where}\n{p.text}" for p in self.pieces)

    def _repr_html_(self) -> str:
        blocks = [f"<b>{html.escape(p.where)}</b>\n{html.escape(p.text)}" for p in self.pieces]
        return f'<pre style="font-size:12px;line-height:1.35">{chr(10).join(blocks)}</pre>'


def source(*objects: Any) -> Source:
    return Source(tuple(piece(obj) for obj in objects))


@dataclass(frozen=True)
class BeforeAfter:
    """A whole method as `reference/buggy` and `reference/fixed` write it: one after the
    other as text, side by side as HTML."""

    before: Piece
    after: Piece

    def __repr__(self) -> str:
        before, after = self.before, self.after
        return f"# before the fix: {before.where}\n{before.text}\n\n# after it: {after.where}\n{after.text}"

    def _repr_html_(self) -> str:
        cells = [
            f'<td style="vertical-align:top;padding-right:12px"><b>{html.escape(head + p.where)}</b>'
            f'<pre style="font-size:11.5px;line-height:1.3">{html.escape(p.text)}</pre></td>'
            for head, p in (("before: ", self.before), ("after: ", self.after))
        ]
        return f"<table><tr>{''.join(cells)}</tr></table>"


def before_after(component: str, method: str) -> BeforeAfter:
    """`component.method` in `reference.buggy` and in `reference.fixed` (e.g. "KVReceiver",
    "_setup_bootstrap_infos"); the method must be written in each variant's own file, not
    inherited from `reference/common`."""
    sides = []
    for variant in (reference.buggy, reference.fixed):
        cls = getattr(variant, component)
        if method not in vars(cls):
            raise ValueError(f"{variant.__name__}.{component} does not define {method} itself")
        sides.append(piece(vars(cls)[method]))
    return BeforeAfter(*sides)
