"""Each notebook's `.ipynb` is generated from its `.py` twin, deterministically.

The `.py` (jupytext percent format) is the source you edit and review; the `.ipynb` is
what Jupyter opens. `render` turns a `.py` into the exact `.ipynb` sources: no
outputs, and cell ids derived from each cell's content (jupytext would draw random ones,
so every regeneration would rewrite every id). A test checks that each committed
`.ipynb`, outputs dropped (`clean`), is exactly `render` of its twin.

    python -m reference.teaching.twins             # rewrite notebooks/*.ipynb, executed (outputs kept)
    python -m reference.teaching.twins --sources   # rewrite them clean, without executing
    python -m reference.teaching.twins --check     # exit 1 naming each .ipynb whose sources are stale

Committed notebooks carry their outputs so they read without running: the default
executes each rendering headless and normalises its outputs (`reference.teaching.render`),
so running the command twice gives the same bytes. `--check` compares sources only.

Needs the `notebooks` extra (jupytext).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from reference.teaching import render as executing
from reference.teaching.pairs import NOTEBOOKS, clean, out_of_date, render, twins

__all__ = ["NOTEBOOKS", "clean", "main", "out_of_date", "render", "twins"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reference.teaching.twins", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--check", action="store_true", help="only report out-of-date .ipynb files")
    parser.add_argument("--sources", action="store_true", help="write without executing (no outputs)")
    parser.add_argument("--folder", type=Path, default=NOTEBOOKS)
    args = parser.parse_args(argv)
    if args.check:
        stale = out_of_date(args.folder)
        for name in stale:
            print(
                f"{name} differs from render of its .py: run python -m reference.teaching.twins",
                file=sys.stderr,
            )
        return 1 if stale else 0
    if not args.sources:
        return executing.main(["--folder", str(args.folder)])
    for py in twins(args.folder):
        py.with_suffix(".ipynb").write_text(render(py))
    return 0


if __name__ == "__main__":
    sys.exit(main())
