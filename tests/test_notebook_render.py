"""`python -m reference.teaching.twins` executes each notebook and commits its outputs
normalised, so that rendering twice gives the same bytes and the sources still match the twin."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("nbclient", reason="needs the `notebooks` extra")
jupytext = pytest.importorskip("jupytext", reason="needs the `notebooks` extra")

from reference.teaching import render, twins  # noqa: E402 (after the skip)

ROOT = Path(__file__).resolve().parents[1]

DEMO = """# %% [markdown]
# A demo

# %%
from reference.teaching import plots

# %%
print(object())

# %%
2 + 2
"""


def test_volatile_text_is_normalised():
    text = "<Foo at 0x7f3a2b1c9d40> on 127.0.0.1:43817, pid 12345, took 12.5 ms"
    assert render.normalise_text(text) == "<Foo at 0x…> on 127.0.0.1:PORT, pid …, took … ms"
    stress = "{'buggy': {'fired': 11, 'trials': 200}, 'fixed': {'fired': 0, 'trials': 200}}"
    committed = "{'buggy': {'fired': 'N>0', 'trials': 200}, 'fixed': {'fired': 0, 'trials': 200}}"
    assert render.normalise_text(stress) == committed, "a non-zero stress count varies; zero is the finding"
    assert render.normalise_text("8 of 8 rooms; 5 s apart") == "8 of 8 rooms; 5 s apart", "facts stay"
    kept = render.normalise_text("cache hit 590 ns, set-up 4.87 ms at 0x7f00aa11", durations=False)
    assert kept == "cache hit 590 ns, set-up 4.87 ms at 0x…", "committed benchmark numbers stay readable"


def _render(folder: Path) -> str:
    """`python -m reference.teaching.render` in a child process (its kernel and sockets go with it)."""
    command = [sys.executable, "-m", "reference.teaching.render", "--folder", str(folder)]
    subprocess.run(
        command, check=True, timeout=90, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    return (folder / "09_demo.ipynb").read_text()


@pytest.mark.timeout(200)
def test_rendering_executes_and_is_byte_identical(tmp_path):
    py = tmp_path / "09_demo.py"
    py.write_text(DEMO)
    first = _render(tmp_path)
    assert _render(tmp_path) == first, "two renderings differ"
    assert twins.clean(first) == twins.render(py), "the executed notebook's sources are its twin's"
    cells = [c for c in jupytext.reads(first, fmt="ipynb").cells if c.cell_type == "code"]
    assert [c.execution_count for c in cells] == [1, 2, 3]
    assert "0x…" in first and " at 0x7" not in first, "the printed address is normalised"
    assert cells[2].outputs, "the last expression's value is kept"


def test_pieces_of_one_stream_become_one_output():
    pieces = [
        {"output_type": "stream", "name": "stdout", "text": "verdict: "},
        {"output_type": "stream", "name": "stdout", "text": ["bug\n"]},
        {"output_type": "stream", "name": "stderr", "text": "warning\n"},
        {"output_type": "execute_result", "data": {"text/plain": "1"}},
        {"output_type": "stream", "name": "stdout", "text": "after\n"},
    ]
    merged = render._merged_streams(pieces)
    assert [o.get("text") for o in merged] == ["verdict: bug\n", "warning\n", None, "after\n"]
