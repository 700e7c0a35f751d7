"""A notebook twin run as a script prints what the notebook shows.

Jupyter shows a code cell's bare last expression; `python notebooks/NAME.py` drops it.
In the twins listed here no code cell ends in a bare expression: each ends in a
statement, `print(...)` or `show(...)` (`reference.teaching.display`: the rich form in
a kernel, the text form in a script). (`tests/test_notebook_twins.py` checks the other
twins the same way; once it covers 06 too, this file can go.)"""

import ast
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
SCRIPTED = ("06_hardened.py",)
SHOWN_BY = ("print", "show")


def _code_cells(text: str) -> list[str]:
    cells = re.split(r"(?m)^(?=# %%)", text)
    return [cell.partition("\n")[2] for cell in cells if cell.partition("\n")[0].strip() == "# %%"]


def _bare(source: str) -> bool:
    body = ast.parse(source).body
    if not body or not isinstance(body[-1], ast.Expr):
        return False
    call = body[-1].value
    return not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in SHOWN_BY)


def test_the_rule_sees_a_bare_expression():
    assert _bare("x = 1\nx + 1") and _bare("{'a': 1}") and _bare("f(\n  2\n)")
    assert not _bare("print(1)") and not _bare("show(f())") and not _bare("x = f()")


@pytest.mark.parametrize("name", SCRIPTED)
def test_no_code_cell_ends_in_a_bare_expression(name):
    cells = _code_cells((NOTEBOOKS / name).read_text())
    assert len(cells) > 10, "the twin's code cells were not found"
    bare = [i for i, cell in enumerate(cells) if _bare(cell)]
    assert not bare, f"{name}: code cells {bare} end in a bare expression (a script run drops it)"
