"""The version matrix: every lesson on every sglang release, written to VERSIONS.md.

    python -m reference.upstream.matrix [--wheels DIR] [--out FILE]

Runs each lesson (mock transport) against every `sglang-*.whl` in DIR (default
`$SGLANG_WHEELS`, else `.cache/sglang`; `bash ci/upstream.sh --all` fetches every
release from 0.5.11 on), and writes two summaries (the four fixes' lessons, and what
the fixes leave open: the residual lessons) and one table: per release and lesson the
verdict, the expectation from upstream's history (`FIRST_FIXED`, `RESIDUAL`), and the
upstream line that decides it (`decides.py`). Exit status: 0 when every verdict is the
expected one, 1 when one differs, 2 when one is an unexpected `unknown` or there is no
wheel. An `unknown` is expected only where the release lacks the component or a
`RESIDUAL` row expects it with its reason (none does today: restart-recovery on 0.5.15 and
0.5.15.post1, whose send blocks for ever upstream, is reported as that `bug`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reference.harness.lesson import Lesson, Options
from reference.harness.result import Result
from reference.lessons import LESSONS
from reference.oneline_args import OneLineParser
from reference.upstream import FIRST_FIXED, RESIDUAL, _release, load_sglang
from reference.upstream.coverage import Decision, decided, label

OUT = Path(__file__).with_name("VERSIONS.md")
OUT_JSON = Path(__file__).with_name("VERSIONS.json")
HEADER = """# Every sglang release, every lesson

Written by `bash ci/upstream.sh --all` (`python -m reference.upstream.matrix`); do not edit.
Each lesson runs on the mock transport against upstream's own classes loaded from the
release's wheel (`reference/upstream/README.md`). *verdict* is what the scenario saw,
*expected* what the release history says (`bug` before the fix, `ok` from the release
with it, `latent` where the defect is in the code but upstream's own wiring does not
trigger it); *decided by* is the line of the method the fix changed that decides it,
and the run's line coverage says that line executed (`coverage.py`; per verdict, the
upstream and adapter lines that ran are in `VERSIONS.json`). A verdict the adapter
decided (that line did not run, or an adapter stand-in for upstream behaviour ran in a
`bug` run) would be marked `adapter-decided`: none is.
The residual lessons are the holes the four fixes leave open (`reference/hardened`
closes them); their expectations, with the upstream line behind each, are
`RESIDUAL` in `reference/upstream/__init__.py`, repeated below. `not present`: the
release lacks the lesson's component (its verdict is `unknown`, as expected); a `RESIDUAL`
row may expect one with its reason (none does). Only an `unknown` nothing expects makes the
run exit 2. `late-kv-write` and
`bootstrap-partition` were found on the netns transport (`reference/netns/`); here, as
every lesson, they run on the mock transport, decided on the decode side (for
`late-kv-write` the scheduler that frees pages and the prefill that writes are the
scenario's, see its `RESIDUAL` rows).
"""


def wheels(directory: Path) -> list[Path]:
    found: dict[str, Path] = {}
    for wheel in directory.glob("sglang-*.whl"):
        version = wheel.name.split("-")[1]
        found.setdefault(version, wheel)
    return [found[v] for v in sorted(found, key=lambda v: (_release(v), v))]


def run(directory: Path) -> tuple[list[Result], list[str], list[dict[str, Any]]]:
    """Every lesson on every wheel, under the coverage tracer (`coverage.py`): the
    results, the table rows and, per verdict, what the run measured as deciding it."""
    results, rows, measured = [], [], []
    for wheel in wheels(directory):
        variant = load_sglang(str(wheel))
        version = variant.name.removeprefix("sglang-")
        for lesson in [*fix_lessons(), *residual_lessons()]:
            result, decision = decided(lesson, variant, Options())
            results.append(result)
            mark = "" if result.as_expected else " **(differs)**"
            shown = label(result, decision)
            if shown != result.verdict:
                mark += f" **({shown}: {_why(decision)})**"
            line = decision.deciding
            if result.verdict == "latent":
                line += f"; latent: {result.details.get('wiring', '')}"
            rows.append(
                f"| {version} | {lesson.id} | `{result.verdict}`{mark} | `{result.expected}` | {line} |"
            )
            measured.append(
                {
                    "release": version,
                    "lesson": lesson.id,
                    "verdict": result.verdict,
                    "label": shown,
                    "expected": result.expected,
                    "decided_by": decision.to_json(),
                }
            )
    return results, rows, measured


def _why(decision: Decision) -> str:
    if not decision.deciding_ran:
        return "the deciding line did not run"
    return "adapter stand-in ran: " + ", ".join(decision.stand_ins)


def fix_lessons() -> list[Lesson]:
    """The lessons of the four upstream fixes."""
    return [lesson for lesson_id, lesson in LESSONS.items() if lesson_id in FIRST_FIXED]


def residual_lessons() -> list[Lesson]:
    """The lessons of what the fixes leave open (their expectations: `RESIDUAL`)."""
    return [lesson for lesson_id, lesson in LESSONS.items() if lesson_id in RESIDUAL]


def summary(results: list[Result], lessons: list[str]) -> list[str]:
    table = ["| release | " + " | ".join(lessons) + " |", "|---" * (len(lessons) + 1) + "|"]
    by_version: dict[str, dict[str, str]] = {}
    for r in results:
        by_version.setdefault(r.variant.removeprefix("sglang-"), {})[r.lesson] = _cell(r)
    for version, verdicts in by_version.items():
        table.append(f"| {version} | " + " | ".join(verdicts.get(x, "") for x in lessons) + " |")
    return table


def _cell(result: Result) -> str:
    absent = result.verdict == "unknown" and "not present in" in result.symptom
    return "not present" if absent else f"`{result.verdict}`"


def why_table() -> list[str]:
    """`RESIDUAL`: from which release each residual lesson is expected what, and why."""
    table = ["| lesson | from | expected | why (upstream line, 0.5.23's unless named) |", "|---|---|---|---|"]
    for lesson, rows in RESIDUAL.items():
        table += [f"| {lesson} | {first} | `{expected}` | {why} |" for first, expected, why in rows]
    return table


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m reference.upstream.matrix", description=__doc__.splitlines()[0])
    default = os.environ.get("SGLANG_WHEELS", ".cache/sglang")
    parser.add_argument("--wheels", type=Path, default=Path(default), help="directory of sglang wheels")
    parser.add_argument("--out", type=Path, default=OUT, help="the Markdown file to write")
    parser.add_argument("--json", type=Path, default=OUT_JSON, help="what decided each verdict, as JSON")
    args = parser.parse_args(argv)
    if not wheels(args.wheels):
        print(f"{parser.prog}: error: no sglang-*.whl in {args.wheels}", file=sys.stderr)
        return 2
    results, rows, measured = run(args.wheels)
    args.json.write_text("[\n" + ",\n".join(json.dumps(row) for row in measured) + "\n]\n")  # a row a line
    fixes, residual = [x.id for x in fix_lessons()], [x.id for x in residual_lessons()]
    detail = ["| release | lesson | verdict | expected | decided by |", "|---|---|---|---|---|", *rows]
    text = "\n".join(
        [
            HEADER,
            *summary(results, fixes),
            "",
            "## What the fixes leave open, per release",
            "",
            *summary(results, residual),
            "",
            *why_table(),
            "",
            "## Every verdict and the line that decides it",
            "",
            *detail,
            "",
        ]
    )
    args.out.write_text(text)
    print(text)
    return matrix_exit(results)


def matrix_exit(results: Sequence[Result]) -> int:
    """0 when every verdict is the expected one (an expected `unknown` included), 1 when one
    differs, 2 when an `unknown` was not expected."""
    if any(r.verdict == "unknown" and not r.as_expected for r in results):
        return 2
    return 0 if all(r.as_expected for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
