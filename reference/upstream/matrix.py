"""The version matrix: every lesson on every sglang release, written to VERSIONS.md.

    python -m reference.upstream.matrix [--wheels DIR] [--out FILE]

Runs each lesson (mock transport) against every `sglang-*.whl` in DIR (default
`$SGLANG_WHEELS`, else `.cache/sglang`; `bash ci/upstream.sh --all` fetches every
release from 0.5.11 on), and writes one table: per release and lesson the verdict, the
expectation from upstream's history, and the upstream line that decides it
(`decides.py`). Exit status as `python -m reference`: 0 when every verdict is the
expected one, 1 when one differs, 2 when one is `unknown` or there is no wheel.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from reference.cli import exit_code
from reference.harness.lesson import Options, run_lesson
from reference.harness.result import Result
from reference.lessons import LESSONS
from reference.oneline_args import OneLineParser
from reference.upstream import _release, load_sglang
from reference.upstream.decides import deciding_line

OUT = Path(__file__).with_name("VERSIONS.md")
HEADER = """# Every sglang release, every lesson

Written by `bash ci/upstream.sh --all` (`python -m reference.upstream.matrix`); do not edit.
Each lesson runs on the mock transport against upstream's own classes loaded from the
release's wheel (`reference/upstream/README.md`). *verdict* is what the scenario saw,
*expected* what the release history says (`bug` before the fix, `ok` from the release
with it, `latent` where the defect is in the code but upstream's own wiring does not
trigger it); *decided by* is the line of the method the fix changed that decides it.
"""


def wheels(directory: Path) -> list[Path]:
    found: dict[str, Path] = {}
    for wheel in directory.glob("sglang-*.whl"):
        version = wheel.name.split("-")[1]
        found.setdefault(version, wheel)
    return [found[v] for v in sorted(found, key=lambda v: (_release(v), v))]


def run(directory: Path) -> tuple[list[Result], list[str]]:
    results, rows = [], []
    for wheel in wheels(directory):
        variant = load_sglang(str(wheel))
        version = variant.name.removeprefix("sglang-")
        for lesson in LESSONS.values():
            result = run_lesson(lesson, variant, Options())
            results.append(result)
            mark = "" if result.as_expected else " **(differs)**"
            decided = deciding_line(variant.module, lesson.id)
            if result.verdict == "latent":
                decided += f"; latent: {result.details.get('wiring', '')}"
            rows.append(
                f"| {version} | {lesson.id} | `{result.verdict}`{mark} | `{result.expected}` | {decided} |"
            )
    return results, rows


def summary(results: list[Result]) -> list[str]:
    lessons = list(LESSONS)
    table = ["| release | " + " | ".join(lessons) + " |", "|---" * (len(lessons) + 1) + "|"]
    by_version: dict[str, dict[str, str]] = {}
    for r in results:
        by_version.setdefault(r.variant.removeprefix("sglang-"), {})[r.lesson] = r.verdict
    for version, verdicts in by_version.items():
        table.append(f"| {version} | " + " | ".join(f"`{verdicts.get(x, '')}`" for x in lessons) + " |")
    return table


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m reference.upstream.matrix", description=__doc__.splitlines()[0])
    default = os.environ.get("SGLANG_WHEELS", ".cache/sglang")
    parser.add_argument("--wheels", type=Path, default=Path(default), help="directory of sglang wheels")
    parser.add_argument("--out", type=Path, default=OUT, help="the Markdown file to write")
    args = parser.parse_args(argv)
    if not wheels(args.wheels):
        print(f"{parser.prog}: error: no sglang-*.whl in {args.wheels}", file=sys.stderr)
        return 2
    results, rows = run(args.wheels)
    detail = ["| release | lesson | verdict | expected | decided by |", "|---|---|---|---|---|", *rows]
    text = "\n".join([HEADER, *summary(results), "", *detail, ""])
    args.out.write_text(text)
    print(text)
    return exit_code(results)


if __name__ == "__main__":
    sys.exit(main())
