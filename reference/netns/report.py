"""`python -m reference --report DIR`: each netns fault run's history and timeline picture.

A lesson's story on netns (`runs.observe`) keeps its run's history in the result's
details; `write(results, out)` writes, for every result that has one,
`<lesson>-<variant>-<transport>.json` (the history and its check) and `.svg` (the
timeline: one lane per host, requests as bars, faults shaded), and returns the paths.

For notebook 06: `committed(fault, variant)` reads a fault run that
`python -m reference.netns.runs --report reference/netns/results` recorded (a real run,
with when and on what machine load), `live(fault, variant)` makes one here (root only),
`picture(run)` draws either, `checks(runs)` says what each one's history check found.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reference.netns.history import History
from reference.netns.timeline import Picture, svg

RESULTS = Path(__file__).with_name("results")  # committed fault runs (`runs.py --report`)


def _name(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", "-".join(parts))


def write(results: Sequence[Any], out: Path) -> list[Path]:
    written: list[Path] = []
    for result in results:
        data = result.details.get("history")
        if not isinstance(data, dict):
            continue
        out.mkdir(parents=True, exist_ok=True)
        base = _name(result.lesson, result.variant, result.transport)  # may hold dots: sglang-0.5.23
        json_path, svg_path = out / f"{base}.json", out / f"{base}.svg"
        check = {k: v for k, v in result.details.items() if k != "history"}
        json_path.write_text(json.dumps({"check": check, "history": data}, indent=2, default=str))
        title = f"{result.lesson} on {result.variant}: {result.symptom}"  # the symptom names the transport
        svg_path.write_text(svg(History.from_json(data), title))
        written += [json_path, svg_path]
    return written


def committed(fault: str, variant: str) -> dict[str, Any]:
    """A recorded fault run (`python -m reference.netns.runs --report reference/netns/results`)."""
    run: dict[str, Any] = json.loads((RESULTS / f"{fault}-{variant}.json").read_text())
    return run


def live(fault: str, variant: str) -> dict[str, Any]:
    """One fault run made now (needs root, `ip`, `nft` and `tc`), shaped as a recorded one."""
    from reference.netns import runs

    run = runs.run(fault, variant)
    run.pop("_history")
    run["recorded"] = {"utc": "now, on this machine (live)"}
    return run


def picture(run: dict[str, Any]) -> Picture:
    title = f"{run['fault']} on {run['variant']}: {run['summary']}"
    return Picture(History.from_json(run["history"]), title)


def checks(runs: dict[str, dict[str, Any]]) -> str:
    """Per run: its verdict and what the history check and the late-write check found."""
    lines = []
    for name, run in runs.items():
        recorded = run["recorded"]
        when = recorded["utc"] + (
            f" UTC, load {recorded['load_average_1min']} on {recorded['cpus']} CPUs"
            if "cpus" in recorded
            else ""
        )
        lines += [
            f"{name} ({when}):",
            *textwrap.wrap(run["summary"], 110, initial_indent="  ", subsequent_indent="    "),
        ]
        rooms = {str(op["index"]): op["value"] for op in run["history"]["ops"]}
        lines += [
            _cut(f"  op {op} (room {rooms.get(op)}) failed: {why}") for op, why in run["failed"].items()
        ]
        lines += [
            f"  failed rooms written after the heal: {run['late_written_rooms'] or 'none'}; "
            f"of them freed for reuse: {run['late_written_while_freed'] or 'none'}",
            f"  pages held out of use at the heal: {run['pages_held_at_heal'] or 'none'}",
            f"  set-up {run['setup_s']} s, teardown {run['teardown_s']} s",
        ]
    return "\n".join(lines)


def _cut(line: str, most: int = 118) -> str:
    return line if len(line) <= most else line[: most - 1] + "…"
