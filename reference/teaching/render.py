"""Committed notebooks carry their outputs, executed and normalised so reruns are identical.

`twins.render` turns each `.py` twin into its clean `.ipynb` (content-derived cell ids);
this module executes that notebook headless (nbclient, one kernel per notebook, from
`notebooks/` as a learner runs it, matplotlib on Agg) and normalises what would change from
run to run, so that rendering twice gives the same bytes:

- no timing metadata (nbclient's `record_timing` is off); consecutive pieces of one stream
  (stdout, stderr) are merged into one output, as a slow kernel may send one print in two;
- memory addresses (`0x7f...`), durations printed in milliseconds or microseconds, ports
  on 127.0.0.1, and PIDs in text outputs are replaced by fixed placeholders; durations are
  kept in notebooks that only print committed results (`COMMITTED_DATA`: the benchmark
  run they load is the same every time, and a reader needs its numbers);
- the hook-free stress rate (`'fired': N` in lesson 02) depends on the machine's load:
  a non-zero count is committed as `'fired': 'N>0'`, zero stays 0 (that is the finding);
- PNGs come from `plots.Picture`, saved without the software/version metadata;
- text lines over 120 characters are wrapped at spaces (`text.wrap`; the verdict printers
  wrap their own lines already, this catches a long repr), so no committed output scrolls
  sideways (`tests/test_notebook_width.py`).

    python -m reference.teaching.render            # execute every notebook and write it
    python -m reference.teaching.render 01_failed   # only notebooks whose name starts so

Needs the `notebooks` extra (jupytext, nbclient, ipykernel, matplotlib).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from reference.teaching.pairs import NOTEBOOKS, render, twins
from reference.teaching.text import wrap

CELL_TIMEOUT_S = 60
# (pattern, replacement) applied to every text output, in this order.
VOLATILE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"0x[0-9a-fA-F]{6,16}"), "0x…"),
    (re.compile(r"(127\.0\.0\.1|localhost):\d{4,5}"), r"\1:PORT"),
    (re.compile(r"\bpid[ =:]+\d+", re.IGNORECASE), "pid …"),
)
DURATION = (re.compile(r"\b\d+(\.\d+)?\s?(ms|µs|us)\b"), "… \\2")
COMMITTED_DATA = {"05_benchmarks.py"}  # outputs come from benchmarks/results/*.json only


STRESS_FIRED = re.compile(r"'fired': (\d+)")


def normalise_text(text: str, durations: bool = True) -> str:
    for pattern, replacement in VOLATILE + ((DURATION,) if durations else ()):
        text = pattern.sub(replacement, text)
    return STRESS_FIRED.sub(lambda m: "'fired': 0" if m.group(1) == "0" else "'fired': 'N>0'", text)


def _merged_streams(outputs: list) -> list:
    """One output per run of the same stream: under load one print can arrive in pieces."""
    merged: list = []
    for output in outputs:
        last = merged[-1] if merged else None
        if (
            output.get("output_type") == "stream"
            and last is not None
            and (last.get("output_type") == "stream" and last.get("name") == output.get("name"))
        ):
            last["text"] = "".join(last["text"]) + "".join(output["text"])
        else:
            merged.append(output)
    return merged


def _normalise(notebook: object, durations: bool) -> None:
    for cell in notebook.cells:  # type: ignore[attr-defined]
        cell.metadata.pop("execution", None)
        if "outputs" in cell:
            cell.outputs = _merged_streams(cell.outputs)
        for output in cell.get("outputs", []):
            if "text" in output:
                output["text"] = wrap(normalise_text("".join(output["text"]), durations))
            data = output.get("data", {})
            for kind in ("text/plain", "text/html", "text/markdown"):
                if kind in data:
                    text = normalise_text("".join(data[kind]), durations)
                    data[kind] = wrap(text) if kind == "text/plain" else text


def executed(py: Path, timeout_s: int = CELL_TIMEOUT_S) -> str:
    """The `.ipynb` text to commit for `py`: its clean rendering, executed and normalised."""
    import jupytext
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.reads(render(py), as_version=4)
    os.environ["MPLBACKEND"] = "Agg"  # the kernel inherits it
    os.environ.setdefault("PYTHONHASHSEED", "0")
    client = NotebookClient(
        notebook,
        timeout=timeout_s,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(py.parent)}},
    )
    client.execute()
    _normalise(notebook, durations=py.name not in COMMITTED_DATA)
    text: str = jupytext.writes(notebook, fmt="ipynb")
    return text if text.endswith("\n") else text + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reference.teaching.render", description=__doc__.splitlines()[0]
    )
    parser.add_argument("prefix", nargs="*", help="only notebooks whose name starts with one of these")
    parser.add_argument("--folder", type=Path, default=NOTEBOOKS)
    args = parser.parse_args(argv)
    for py in twins(args.folder):
        if args.prefix and not any(py.name.startswith(p) for p in args.prefix):
            continue
        print(f"executing {py.with_suffix('.ipynb').name}", file=sys.stderr)
        py.with_suffix(".ipynb").write_text(executed(py))
    return 0


if __name__ == "__main__":
    sys.exit(main())
