"""The verdict table `python -m reference` prints, its legend, and what an `--impl` run means.

A person reads the table in a terminal, so it fits `WIDTH` (120) columns: every column but
the symptom is as wide as its widest cell, and the symptom gets what is left, cut with
`CUT` when longer (whole with `--verbose`, and always in `--json`). Under the table a
legend explains each mark the table uses (`!`, `CUT`, `-`, the `checks` count, each
verdict word that appears), so a new verdict or check needs no new column. On upstream
sglang a verdict the adapter's code decided, not upstream's, reads `<verdict> (adapter-decided)`,
measured from the run's line coverage (`reference/upstream/coverage.py`; `decided_fields`
puts the label and what decided it into `--json`).

`impl_summary` says what a run of your own module found in the terms a reviewer of an
upstream fix asks for: do the four fix lessons pass, and which residual lessons fail
(holes upstream's fixes leave open; `reference/hardened` closes them), beside the ones
upstream's latest release checked here still fails (`reference.upstream.RESIDUAL`).
`--lesson fixes` (`FIX_LESSONS`) runs the four alone: its exit status is the gate a CI job
for a fix wants.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from reference.harness.checks import score
from reference.harness.result import Result
from reference.variants import RESIDUAL_LESSON_IDS

WIDTH = 120
CUT = " …"  # ends a symptom cut to fit the width
MAX_VARIANT = 28  # a longer variant (an --impl path) shows its end, after "…"
MIN_SYMPTOM = 16  # a symptom column never narrower than this, even when the others are wide
# The lessons of upstream's four fixes (teaching order), and the group names `--lesson` takes.
FIX_LESSONS = ("failed-resurrect", "live-set-race", "stale-bootstrap", "task-refs")
GROUPS = {"fixes": FIX_LESSONS, "residual": RESIDUAL_LESSON_IDS}
HEADER = ("lesson", "variant", "transport", "verdict", "expected", "sockets", "checks", "time", "symptom")
ADAPTER_DECIDED = "adapter-decided"
VERDICT_WORDS = {
    "ok": "the lesson's story and every check held",
    "bug": "the story or a check saw the defect (the symptom says what)",
    "latent": "the defect is in the code but nothing in that release triggers it (--provoke adds it)",
    "unknown": "no verdict: a time bound, a crash, or a component the variant lacks",
}


def _transport(result: Result) -> str:
    return f"{result.transport}+{result.backend}" if result.backend else result.transport


def short(name: str, room: int = MAX_VARIANT) -> str:
    """`name`, or its last `room - 1` characters after "…" (a path's end names it best)."""
    return name if len(name) <= room else "…" + name[-(room - 1) :]


def decided_fields(result: Result) -> dict[str, Any]:
    """An upstream result's `label` (its verdict, or `adapter-decided`) and `decided_by`
    (the coverage of its checks) for `--json`; {} for a result of any other variant."""
    if not any("decided_by" in c.details for c in result.checks):
        return {}
    from reference.upstream.coverage import json_fields  # the upstream adapter: only for its results

    return json_fields(result)


def _adapter_decided(result: Result) -> bool:
    return decided_fields(result).get("label") == ADAPTER_DECIDED


def _row(r: Result) -> tuple[str, ...]:
    verdict = r.verdict + (f" ({ADAPTER_DECIDED})" if _adapter_decided(r) else "")
    verdict += "" if r.as_expected else " !"
    checks = score(r.checks) if r.checks else "-"
    where, time = _transport(r), f"{r.seconds:.2f}s"
    return (r.lesson, short(r.variant), where, verdict, r.expected, r.sockets, checks, time)


def cut(text: str, room: int) -> str:
    """`text` on one line, at most `room` characters, ending in `CUT` when shortened."""
    text = " ".join(text.split())
    return text if len(text) <= room else text[: max(0, room - len(CUT))].rstrip() + CUT


def format_table(results: Sequence[Result], width: int = WIDTH, verbose: bool = False) -> str:
    """One row per result; the symptom cut to fit `width` columns unless `verbose`."""
    rows = [HEADER[:-1], *(_row(r) for r in results)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER) - 1)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    room = max(MIN_SYMPTOM, width - len(lines[0]) - 2)
    symptoms = [HEADER[-1], *(r.symptom if verbose else cut(r.symptom, room) for r in results)]
    return "\n".join(f"{line}  {symptom}".rstrip() for line, symptom in zip(lines, symptoms, strict=True))


def legend(results: Sequence[Result], verbose: bool = False) -> str:
    """What each mark in the table means; only the marks these results use, one per line."""
    lines = ["legend:"]
    if any(not r.as_expected for r in results):
        lines.append("  !        the verdict differs from the expected one (the exit status is then 1 or 2)")
    if not verbose and any(line.endswith(CUT) for line in format_table(results).splitlines()):
        lines.append(f"  {CUT.strip():<8} symptom cut to fit {WIDTH} columns; whole with --verbose or --json")
    if any(short(r.variant) != r.variant for r in results):
        lines.append(
            f"  …/name   a variant named by a path longer than {MAX_VARIANT}: its end (whole in --json)"
        )
    if any(r.checks for r in results):
        lines.append(
            "  checks   n/m: n of the m checks run held (the story first, then the lesson's checklist)"
        )
    if any(not r.checks for r in results):
        lines.append("  -        no checklist ran (an upstream release, or --check of another lesson)")
    for word, meaning in VERDICT_WORDS.items():
        if any(word in (r.verdict, r.expected) for r in results):
            lines.append(f"  {word:<8} {meaning}")
    if any(_adapter_decided(r) for r in results):
        lines.append(
            f"  {ADAPTER_DECIDED}  by line coverage: the upstream line it turns on did not run, "
            "or a stand-in ran where a check saw bug"
        )
    lines.append(
        "  expected buggy: bug; fixed: ok, bug on the residual lessons; --impl: ok; --sglang: its history"
    )
    return "\n".join(lines)


def impl_summary(results: Sequence[Result], variant: str) -> str:
    """For one `--impl` variant: the fix lessons, then the residual ones beside upstream's latest."""
    mine = {r.lesson: r for r in results if r.variant == variant}
    fixes = [mine[i] for i in FIX_LESSONS if i in mine]
    residual = [mine[i] for i in RESIDUAL_LESSON_IDS if i in mine]
    lines = [f"{short(variant, WIDTH - 1)}:"]
    if fixes:
        passed = [r.lesson for r in fixes if r.verdict == "ok"]
        failed = [r.lesson for r in fixes if r.verdict != "ok"]
        head = f"  fix lessons: {len(passed)} of {len(fixes)} pass"
        lines.append(head + (f"; failing: {', '.join(failed)}" if failed else f" ({', '.join(passed)})"))
    if residual:
        failing = [r.lesson for r in residual if r.verdict != "ok"]
        release, still = upstream_still_open()
        lines.append(
            f"  residual lessons (holes the upstream fixes leave open; reference/hardened closes them): "
            f"{len(failing)} of {len(residual)} fail" + (f" ({', '.join(failing)})" if failing else "")
        )
        closed = ", ".join(i for i in RESIDUAL_LESSON_IDS if i not in still)
        lines.append(
            f"  upstream {release} (the latest release in reference/upstream/VERSIONS.md) fails "
            f"{len(still)} of them: {', '.join(still)}" + (f"; closed there: {closed}" if closed else "")
        )
    if fixes and residual:
        lines.append("  to gate on the fix lessons alone: --lesson fixes (exit 0 when all four pass)")
    return "\n".join(textwrap.fill(line, WIDTH, subsequent_indent="    ") for line in lines)


def upstream_still_open() -> tuple[str, list[str]]:
    """The latest release `reference.upstream.RESIDUAL` records, and the residual lessons it fails."""
    from reference.upstream import RESIDUAL  # the upstream adapters: only for an --impl summary

    def key(release: str) -> tuple[int, ...]:
        return tuple(int(part) for part in release.split("."))

    latest = max((row[0] for rows in RESIDUAL.values() for row in rows), key=key)
    still = [
        lesson
        for lesson in RESIDUAL_LESSON_IDS
        if [e for release, e, _ in RESIDUAL.get(lesson, ()) if key(release) <= key(latest)][-1:] == ["bug"]
    ]
    return latest, still


def expand_groups(names: Sequence[str]) -> list[str]:
    """`--lesson` values with each group name (`fixes`, `residual`) replaced by its lessons."""
    out: list[str] = []
    for name in names:
        out += [i for i in GROUPS.get(name, (name,)) if i not in out]
    return out
