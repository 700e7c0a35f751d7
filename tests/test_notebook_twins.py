"""Each notebook is a jupytext pair, committed executed, with no library code in its cells.

- every `notebooks/NAME.ipynb` has a `NAME.py` twin (percent format) and the other way
  round; the .ipynb's sources (outputs dropped) are exactly what
  `python -m reference.teaching.twins --sources` renders from the .py (content-derived
  cell ids), and converting it back gives the .py byte for byte;
- committed notebooks carry their outputs, so they read without running: every code cell
  was executed, in order, and every cell ending in an expression shows a result; outputs
  hold no memory addresses (the render normalises them); CI still executes them all;
- code cells import only from the `reference` package and define nothing (no def,
  class or lambda): helpers belong in `reference/teaching/`, where they are tested. The one
  exception is a cell marked as an exercise (its first line is `# EXERCISE:`), where the
  learner writes a fix: it may define classes and functions, and import the standard library;
- a twin run as a script (`python notebooks/NAME.py`) prints what the notebook shows: no
  cell leaves its result in a bare last expression. A cell ends in `show(...)`
  (`reference.teaching.display`) or `print(...)`; a bare call is allowed only for its effect,
  where the committed notebook shows no value for it (it returned None).
"""

import ast
import re
import sys
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext", reason="needs the `notebooks` extra (jupytext)")

from reference.teaching.twins import clean, render  # noqa: E402 (after the skip: it needs jupytext)

# The header line jupytext stamps with its own release; a newer jupytext writes the same pair.
VERSION_STAMP = re.compile(r"^#\s+jupytext_version: .*$", re.MULTILINE)

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
IPYNB = sorted(NOTEBOOKS.glob("*.ipynb"))
TWINS = sorted(p for p in NOTEBOOKS.glob("*.py"))


def test_there_are_notebooks_and_every_one_has_a_twin():
    assert IPYNB, "no notebooks found"
    assert [p.stem for p in IPYNB] == [p.stem for p in TWINS]


@pytest.mark.parametrize("path", IPYNB, ids=lambda p: p.name)
def test_ipynb_is_its_py_twin(path):
    twin = path.with_suffix(".py")
    assert clean(path.read_text()) == render(twin), (
        f"{path.name}'s cells differ from {twin.name}: run `.venv/bin/python -m reference.teaching.twins`"
    )
    back = jupytext.writes(jupytext.read(path), fmt="py:percent")
    assert VERSION_STAMP.sub("", back) == VERSION_STAMP.sub("", twin.read_text())


def _ends_in_expression(source: str) -> bool:
    body = ast.parse(source).body
    return bool(body) and isinstance(body[-1], ast.Expr) and not source.rstrip().endswith(";")


@pytest.mark.parametrize("path", IPYNB, ids=lambda p: p.name)
def test_committed_with_outputs(path):
    cells = [c for c in jupytext.read(path).cells if c.cell_type == "code"]
    counts = [c.get("execution_count") for c in cells]
    assert counts == list(range(1, len(cells) + 1)), (
        f"{path.name}: not executed top to bottom (execution counts {counts}): "
        "run `.venv/bin/python -m reference.teaching.twins`"
    )
    silent = [i for i, c in enumerate(cells) if _ends_in_expression(c.source) and not c.get("outputs")]
    assert not silent, f"{path.name}: code cells {silent} end in an expression but show no output"
    errors = [i for i, c in enumerate(cells) for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{path.name}: code cells {errors} raised"
    assert " at 0x" not in path.read_text(), f"{path.name}: an output shows a memory address"


EXERCISE_MARK = "# EXERCISE:"


def _problems(source: str) -> list[str]:
    found = []
    exercise = source.lstrip().startswith(EXERCISE_MARK)
    for node in ast.walk(ast.parse(source)):
        if exercise and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue  # the learner's fix: a subclass of the buggy component
        allowed = {"reference", *(sys.stdlib_module_names if exercise else ())}
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            found.append(f"defines {getattr(node, 'name', 'a lambda')}")
        elif isinstance(node, ast.Import):
            found += [f"imports {a.name}" for a in node.names if a.name.split(".")[0] not in allowed]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] not in allowed:
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
    exercise = "# EXERCISE: the fix\nclass KVManager(reference.buggy.KVManager):\n    def f(self): pass\n"
    assert _problems(exercise) == [], "a cell marked as an exercise may define the learner's fix"
    assert _problems(exercise + "import asyncio\n") == [], "and import the standard library"
    assert _problems(exercise + "import numpy\n") == ["imports numpy"], "but nothing else"
    assert _problems("x = 1\n" + exercise) == ["defines KVManager", "defines f"], "the mark opens the cell"


def test_twins_cli_renders_and_checks(tmp_path, capsys):
    from reference.teaching import twins

    (tmp_path / "09_demo.py").write_text("# %% [markdown]\n# Hello\n\n# %%\n1 + 1\n\n# %%\n1 + 1\n")
    assert twins.main(["--check", "--folder", str(tmp_path)]) == 1
    assert "09_demo.ipynb differs" in capsys.readouterr().err
    assert twins.main(["--sources", "--folder", str(tmp_path)]) == 0
    assert twins.main(["--check", "--folder", str(tmp_path)]) == 0
    ids = [c.id for c in jupytext.read(tmp_path / "09_demo.ipynb").cells]
    assert len(set(ids)) == 3 and ids[2] == f"{ids[1]}-2", "equal cells get distinct, stable ids"


SHOWN_BY = {"print", "show"}


def bare_results(source: str, shows_a_value: bool) -> list[str]:
    """The cell's last expression, if a script run would drop what the notebook shows of it:
    any bare expression but a call to `print`/`show`, and a bare call whose value the committed
    notebook shows (`shows_a_value`: an `execute_result`); a call kept for its effect shows none."""
    body = ast.parse(source).body
    if not body or not isinstance(body[-1], ast.Expr):
        return []
    value = body[-1].value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in SHOWN_BY:
        return []
    if isinstance(value, ast.Call) and not shows_a_value:
        return []
    return [ast.get_source_segment(source, body[-1]) or ""]


def test_the_bare_result_check_catches_a_dropped_value():
    assert bare_results("x = 1\nx", shows_a_value=True) == ["x"]
    assert bare_results("{'a': 1}", shows_a_value=True) == ["{'a': 1}"]
    assert bare_results("diffs.fix_diff('x')", shows_a_value=True) == ["diffs.fix_diff('x')"]
    assert bare_results("receiver.clear()", shows_a_value=False) == [], "a call for its effect"
    assert bare_results("x", shows_a_value=False) == ["x"], "a bare name is never a call for its effect"
    assert bare_results("show(diffs.fix_diff('x'))", shows_a_value=False) == []
    assert bare_results("print(x)\nreceiver.clear()", shows_a_value=False) == []


@pytest.mark.parametrize("path", IPYNB, ids=lambda p: p.name)
def test_a_twin_run_as_a_script_prints_every_result(path):
    cells = [c for c in jupytext.read(path).cells if c.cell_type == "code"]
    bare = [
        f"cell {i}: {found[:60]}"
        for i, cell in enumerate(cells)
        for found in bare_results(
            cell.source, any(o.get("output_type") == "execute_result" for o in cell.get("outputs", []))
        )
    ]
    assert not bare, f"{path.with_suffix('.py').name}: results left in a bare expression: " + "; ".join(bare)


def _shown_texts(path: Path) -> list[str]:
    """Every text the committed notebook shows: streams, and the plain text of each result."""
    texts = []
    for cell in jupytext.read(path).cells:
        for output in cell.get("outputs", []):
            texts.append(
                "".join(output.get("text", "")) or "".join(output.get("data", {}).get("text/plain", ""))
            )
    return [" ".join(text.split()) for text in texts if text.strip()]


def test_the_tour_run_as_a_script_prints_what_its_notebook_shows(tmp_path, monkeypatch, capsys):
    import runpy

    from reference.teaching import display, render

    monkeypatch.setattr(display, "PICTURES", tmp_path)
    monkeypatch.setattr(sys, "argv", [str(NOTEBOOKS / "00_tour.py")])
    runpy.run_path(str(NOTEBOOKS / "00_tour.py"), run_name="__main__")
    printed = " ".join(render.normalise_text(capsys.readouterr().out).split())
    missing = [text[:80] for text in _shown_texts(NOTEBOOKS / "00_tour.ipynb") if text not in printed]
    assert not missing, f"the script does not print what the notebook shows: {missing}"
    pictures = sorted(tmp_path.glob("00_tour-*.png"))
    assert len(pictures) == 2 and all(p.read_bytes().startswith(b"\x89PNG") for p in pictures)
    assert f"saved as {pictures[0]}" in printed


def test_show_prints_a_value_as_its_text_outside_jupyter(capsys):
    from reference.teaching.display import show

    wide = {f"room {i}": list(range(12)) for i in range(4)}
    show("a string", wide)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "'a string'", "what Jupyter shows for a string result"
    assert len(out) == 5 and all(len(line) <= 120 for line in out), (
        "a container pretty-printed in 120 columns"
    )
