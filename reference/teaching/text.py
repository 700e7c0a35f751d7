"""Text a notebook prints, kept within a reader's width.

A verdict line carries its whole symptom (a check's evidence is often a list of rooms or a
trace step), and an output cell does not wrap it: in a committed notebook a 500-character
line scrolls sideways. `wrap` breaks every line longer than `WIDTH` at spaces, each
continuation indented a little past where the line's text starts, and breaks a long word
only when it alone is too wide. Lines within the width are left as they are (tables keep
their columns).
"""

from __future__ import annotations

import textwrap

WIDTH = 120  # the widest output line a committed notebook holds (tests/test_notebook_width.py)
HANG = 4  # extra indent of a continuation line


def wrap(text: str, width: int = WIDTH) -> str:
    """`text` with every line over `width` characters wrapped at spaces."""
    out: list[str] = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        lead = len(line) - len(line.lstrip(" "))
        indent = " " * min(lead + HANG, width // 2)
        out += textwrap.wrap(
            line,
            width=width,
            subsequent_indent=indent,
            break_on_hyphens=False,
            drop_whitespace=True,
            replace_whitespace=False,
        ) or [line[:width]]
    return "\n".join(out)
