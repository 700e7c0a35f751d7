"""No committed notebook prints a line a reader has to scroll sideways for.

Every text output line of every committed `.ipynb` (streams, and the plain-text form of a
result) is at most `text.WIDTH` (120) characters; `text.wrap` keeps the verdict printers
and the renderer within it, and is checked here on a line it must break."""

import json
from pathlib import Path

import pytest

from reference.teaching.text import WIDTH, wrap

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def _output_lines(path: Path) -> list[tuple[int, str]]:
    lines = []
    for index, cell in enumerate(json.loads(path.read_text())["cells"]):
        for output in cell.get("outputs", []):
            texts = ["".join(output.get("text", ""))]
            texts.append("".join(output.get("data", {}).get("text/plain", "")))
            lines += [(index, line) for text in texts for line in text.split("\n")]
    return lines


def test_wrap_breaks_a_long_line_and_keeps_short_ones():
    long = " buggy: BUG     (as expected) " + "room 7 came back as Failed; " * 10
    wrapped = wrap(long + "\nshort line")
    assert all(len(line) <= WIDTH for line in wrapped.split("\n"))
    assert wrapped.split("\n")[-1] == "short line"
    assert wrapped.split("\n")[1].startswith(" " * 5)  # a continuation hangs past the text's start
    assert " ".join(wrapped.split()) == " ".join((long + "\nshort line").split())  # no word lost


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_output_line_is_over_the_width(path):
    over = [(cell, len(line), line[:60]) for cell, line in _output_lines(path) if len(line) > WIDTH]
    assert not over, f"{path.name}: {len(over)} output lines over {WIDTH} characters, first {over[:3]}"
