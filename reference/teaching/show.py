"""`display(obj)` for notebook cells that must also run as a script.

A notebook shows a cell's last expression; a script run of its `.py` twin
(`python notebooks/06_hardened.py`) shows nothing for it. A cell that ends in
`display(obj)` shows the same thing both ways: Jupyter's rich form (a picture, a
coloured diff) in a kernel, and `print(obj)` (its text form) anywhere else, including
where IPython is not installed.
"""

from __future__ import annotations

from typing import Any


def display(*objects: Any) -> None:
    try:
        from IPython.display import display as rich
    except ImportError:  # the `notebooks` extra is not installed: a plain script run
        print(*objects)
        return
    rich(*objects)  # outside a kernel IPython prints them too
