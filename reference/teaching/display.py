"""`show(value)`: a cell's result, shown the same in Jupyter and in a plain run of its twin.

Jupyter shows the value of a cell's last expression; `python notebooks/03_stale_bootstrap.py`
(the cell's `.py` twin run as a script) would drop it without a word. So a notebook cell ends
in `show(...)` or `print(...)`, never in a bare expression (`tests/test_notebook_twins.py`):

- in Jupyter (an IPython kernel is running), `show` is IPython's `display`: pictures inline,
  diffs and sources as coloured HTML, any other value as its text;
- in a plain run it prints each value's text, what Jupyter shows as `text/plain` (containers
  pretty-printed within 120 columns); a picture prints as its title, and its PNG is saved
  under the temporary directory (`reference-notebooks/`), the path printed beside it.
"""

from __future__ import annotations

import pprint
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from reference.teaching.text import WIDTH

PICTURES = Path(tempfile.gettempdir()) / "reference-notebooks"
_saved: list[Path] = []


def _kernel() -> bool:
    ipython = sys.modules.get("IPython")  # never imported here: a plain run does not need it
    return ipython is not None and ipython.get_ipython() is not None


def _text(value: Any) -> str:
    if isinstance(value, dict | list | set | tuple | frozenset):
        return pprint.pformat(value, width=WIDTH, sort_dicts=False)
    return repr(value)


def _save(value: Any) -> str:
    """The picture's text, and where its PNG now lies."""
    script = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else "notebook"
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", script) or "notebook"
    path = PICTURES / f"{name}-{len(_saved) + 1}.png"
    PICTURES.mkdir(parents=True, exist_ok=True)
    path.write_bytes(value._repr_png_())
    _saved.append(path)
    return f"{value!r}, saved as {path}"


def show(*values: Any) -> None:
    """Display each value as a notebook's last expression would; in a plain run, print it."""
    if _kernel():
        from IPython.display import display

        display(*values)
        return
    for value in values:
        print(_save(value) if hasattr(value, "_repr_png_") else _text(value))
