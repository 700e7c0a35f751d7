"""Each notebook is a jupytext pair, committed clean, with no library code in its cells.

- every `notebooks/NAME.ipynb` has a `NAME.py` twin (percent format) and the other way
  round; the .ipynb is exactly what `python -m reference.teaching.twins` renders from the
  .py (content-derived cell ids), and converting it back gives the .py byte for byte;
- committed notebooks carry no outputs and no execution counts (CI executes them);
- code cells import only from the `reference` package and define nothing (no def,
  class or lambda): helpers belong in `reference/teaching/`, where they are tested.
"""

import ast
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext", reason="needs the `notebooks` extra (jupytext)")

from reference.teaching.twins import render  # noqa: E402 (after the skip: it needs jupytext)

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
IPYNB = sorted(NOTEBOOKS.glob("*.ipynb"))
TWINS = sorted(p for p in NOTEBOOKS.glob("*.py"))


def test_there_are_notebooks_and_every_one_has_a_twin():
    assert IPYNB, "no notebooks found"
    assert [p.stem for p in IPYNB] == [p.stem for p in TWINS]


@pytest.mark.parametrize("path", IPYNB, ids=lambda p: p.name)
def test_ipynb_is_its_py_twin(path):
    twin = path.with_suffix(".py")
    assert path.read_text() == render(twin), (
        f"{path.name} is not the rendering of {twin.name}: run `.venv/bin/python -m reference.teaching.twins`"
    )
    assert jupytext.writes(jupytext.read(path), fmt="py:percent") == twin.read_text()


@pytest.mark.parametrize("path", IPYNB, ids=lambda p: p.name)
def test_committed_without_outputs(path):
    cells = [c for c in jupytext.read(path).cells if c.cell_type == "code"]
    dirty = [i for i, c in enumerate(cells) if c.get("outputs") or c.get("execution_count") is not None]
    assert not dirty, f"{path.name}: code cells {dirty} carry outputs; regenerate it from its .py"


def _problems(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            found.append(f"defines {getattr(node, 'name', 'a lambda')}")
        elif isinstance(node, ast.Import):
            found += [f"imports {a.name}" for a in node.names if a.name.split(".")[0] != "reference"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] != "reference":
            found.append(f"imports from {node.module}")
    return found


@pytest.mark.parametrize("path", IPYNB, ids=lambda p: p.name)
def test_cells_only_call_the_package(path):
    cells = [c.source for c in jupytext.read(path).cells if c.cell_type == "code"]
    problems = [f"cell {i}: {p}" for i, src in enumerate(cells) for p in _problems(src)]
    problems += [f"cell {i} is empty" for i, src in enumerate(cells) if not src.strip()]
    assert not problems, f"{path.name}: " + "; ".join(problems)


def test_the_cell_check_catches_library_code():
    assert _problems("import numpy\nfrom os import path\ndef f(): pass\nx = lambda: 1") == [
        "imports numpy",
        "imports from os",
        "defines f",
        "defines a lambda",
    ]
    assert _problems("import reference.buggy\nfrom reference.teaching import runs") == []


def test_twins_cli_renders_and_checks(tmp_path, capsys):
    from reference.teaching import twins

    (tmp_path / "09_demo.py").write_text("# %% [markdown]\n# Hello\n\n# %%\n1 + 1\n\n# %%\n1 + 1\n")
    assert twins.main(["--check", "--folder", str(tmp_path)]) == 1
    assert "09_demo.ipynb differs" in capsys.readouterr().err
    assert twins.main(["--folder", str(tmp_path)]) == 0
    assert twins.main(["--check", "--folder", str(tmp_path)]) == 0
    ids = [c.id for c in jupytext.read(tmp_path / "09_demo.ipynb").cells]
    assert len(set(ids)) == 3 and ids[2] == f"{ids[1]}-2", "equal cells get distinct, stable ids"
