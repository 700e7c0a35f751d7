"""`python -m reference --report DIR`: each netns fault run's history and timeline picture.

A lesson's story on netns (`runs.observe`) keeps its run's history in the result's
details; `write(results, out)` writes, for every result that has one,
`<lesson>-<variant>-<transport>.json` (the history and its check) and `.svg` (the
timeline: one lane per host, requests as bars, faults shaded), and returns the paths.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reference.netns.history import History
from reference.netns.timeline import svg


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
