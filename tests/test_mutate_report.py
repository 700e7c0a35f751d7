"""The semantic mutation page (`reference.mutate.report`): its per-stage line counts only
detected mutants, so an `inconclusive` row (a deep check cut at its time bound in the
default-run stage) is not shown as detected there."""

from __future__ import annotations

import json
import re
from pathlib import Path

from reference.mutate import report

FOURTH = Path(__file__).resolve().parents[1] / "reference" / "mutate" / "fourth_sample"


def _per_stage(data: dict) -> int:
    line = next(x for x in report.markdown(data, FOURTH).splitlines() if x.startswith("Detected per stage"))
    return sum(int(n) for n in re.findall(r": (\d+)", line))


def test_the_stages_add_up_to_the_detected_mutants_with_inconclusive_rows_left_out() -> None:
    data = json.loads((FOURTH / "results.json").read_text())
    rows = data["mutants"]
    assert any(r["status"] == "inconclusive" and r["stage"] for r in rows)  # the case this is about
    assert _per_stage(data) == sum(r["status"] in report.DETECTED for r in rows)
