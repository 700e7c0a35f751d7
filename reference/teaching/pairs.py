"""The notebooks and their jupytext twins as pure functions: render a `.py` twin to its
clean `.ipynb`, drop outputs, list the pairs, find the stale ones. The command that uses
them is `python -m reference.teaching.twins`; `render.py` executes what they render.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def render(py: Path) -> str:
    import jupytext  # the `notebooks` extra

    notebook = jupytext.read(py)
    seen: Counter[str] = Counter()
    for cell in notebook.cells:
        digest = hashlib.sha1(f"{cell.cell_type}\n{cell.source}".encode()).hexdigest()[:8]
        seen[digest] += 1
        cell.id = digest if seen[digest] == 1 else f"{digest}-{seen[digest]}"
    text: str = jupytext.writes(notebook, fmt="ipynb")
    return text if text.endswith("\n") else text + "\n"


def clean(ipynb_text: str) -> str:
    """The notebook text with outputs, execution counts and kernel info dropped: its sources."""
    import jupytext
    import nbformat

    notebook = nbformat.reads(ipynb_text, as_version=4)
    notebook.metadata.pop("language_info", None)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    text: str = jupytext.writes(notebook, fmt="ipynb")
    return text if text.endswith("\n") else text + "\n"


def twins(folder: Path = NOTEBOOKS) -> list[Path]:
    return sorted(folder.glob("[0-9]*.py"))


def out_of_date(folder: Path = NOTEBOOKS) -> list[str]:
    stale = []
    for py in twins(folder):
        ipynb = py.with_suffix(".ipynb")
        if not ipynb.exists() or clean(ipynb.read_text()) != render(py):
            stale.append(ipynb.name)
    return stale
