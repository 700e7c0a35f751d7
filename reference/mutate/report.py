"""The semantic mutation run as data (`results.json`) and as a page (`RESULTS.md`): counts
per operator and per file, the kill rate over non-equivalent mutants, and every
survivor with its hand-read judgment from `judgments.py` (equivalent, with the
argument, or a known gap, with the check that would catch it)."""

from __future__ import annotations

import difflib
import json
import math
import os
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reference.mutate.judgments import EQ, GAP, JUDGMENTS
from reference.mutate.runner import Outcome, unmutated_sources

DETECTED = ("killed", "unknown", "timeout", "import-error")
STATUSES = (*DETECTED, "survived", "inconclusive")
JUDGED = ("of which equivalent", "of which known gap")


def _diff(variant: str, file: str, mutated: str, originals: dict[str, dict[str, str]]) -> str:
    if variant not in originals:
        originals[variant] = unmutated_sources(variant)
    before = originals[variant][file].splitlines(keepends=True)
    lines = difflib.unified_diff(before, mutated.splitlines(keepends=True), n=1)
    return "".join(list(lines)[2:])


def to_json(run: dict[str, Any], outcomes: Sequence[Outcome]) -> dict[str, Any]:
    originals: dict[str, dict[str, str]] = {}
    rows = []
    for o in outcomes:
        m = o.mutant
        rows.append(
            {
                "key": m.key,
                "variant": m.variant,
                "file": m.file,
                "operator": m.edit.operator,
                "function": m.edit.function,
                "line": m.edit.line,
                "description": m.edit.description,
                "lessons": list(m.lessons),
                "status": o.status,
                "seconds": round(o.seconds, 2),
                "told_apart_by": sorted({d.split(":")[0].split("/")[0] for d in o.differences}),
                "only_bug_to_ok": bool(o.differences) and all(d.endswith("bug -> ok") for d in o.differences),
                "differences": o.differences[:6],  # the first few (sorted) differing verdicts
                "note": o.note,
                "stage": o.stage,
                "diff": _diff(m.variant, m.file, m.edit.source, originals) if o.status == "survived" else "",
            }
        )
    return {"run": run, "mutants": rows}


HERE = Path(__file__).resolve().parent


def _judgment_of(r: dict[str, Any]) -> tuple[str, str]:
    """The hand-read judgment of a survivor (its key names the edit and its function's
    source, so a judgment holds while that function is unchanged)."""
    return JUDGMENTS.get(r["key"], ("unjudged", "not read yet"))


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion, in percent (95% for z = 1.96)."""
    if n == 0:
        return 0.0, 100.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return 100 * max(0.0, centre - half), 100 * min(1.0, centre + half)


def summary(data: dict[str, Any], sampled: bool | None = None) -> dict[str, Any]:
    """Counts and the kill rate; with `sampled` (default: the run drew a sample), the rate's
    95% Wilson interval too."""
    if sampled is None:
        run = data.get("run", {})
        sampled = bool(run.get("sample")) and run["sample"] < run.get("generated", 0)
    rows = data["mutants"]
    counts = Counter(r["status"] for r in rows)
    survivors = [r for r in rows if r["status"] == "survived"]
    equivalent = sum(1 for r in survivors if _judgment_of(r)[0] == "equivalent")
    detected = sum(counts[s] for s in DETECTED)
    non_equivalent = len(rows) - equivalent - counts["inconclusive"]
    rate = detected / non_equivalent if non_equivalent else 1.0
    line = (
        f"{len(rows)} mutants judged: {counts['killed']} killed, {counts['unknown']} unknown, "
        f"{counts['timeout']} timed out, {counts['import-error']} failed to import, "
        f"{counts['survived']} survived ({equivalent} equivalent)"
        + (f", {counts['inconclusive']} inconclusive (left out)" if counts["inconclusive"] else "")
        + "; "
        f"kill rate over non-equivalent {detected}/{non_equivalent} = {100 * rate:.1f}%"
        + (
            " (95% Wilson interval {:.1f}-{:.1f}%)".format(*wilson(detected, non_equivalent))
            if sampled
            else ""
        )
    )
    return {
        "counts": counts,
        "equivalent": equivalent,
        "detected": detected,
        "non_equivalent": non_equivalent,
        "rate": rate,
        "line": line,
    }


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def _counts_by(rows: Sequence[dict[str, Any]], field: str) -> list[list[Any]]:
    groups: dict[str, Counter] = {}
    for r in rows:
        groups.setdefault(r[field], Counter())[r["status"]] += 1
    judged: dict[str, Counter] = {}
    for r in rows:
        if r["status"] == "survived":
            judged.setdefault(r[field], Counter())[_judgment_of(r)[0]] += 1
    table = []
    for name, c in groups.items():
        j = judged.get(name, Counter())
        table.append([f"`{name}`", sum(c.values()), *(c[s] for s in STATUSES), j[EQ], j[GAP]])
    return table


OPERATOR_TEXT = {
    "remove-lock": "RSB: `with <...lock>:` removed, body kept",
    "shrink-lock": "SKCR: first or last statement of a locked block moved out",
    "split-lock": "SPCR: a locked block split in two",
    "move-lock": "SHCR: a locked block shifted one statement down or up",
    "is-to-eq": "`is` -> `==`, `is not` -> `!=` (not against None)",
    "delete-stmt": "one call, assignment or `del` deleted",
    "swap-stmts": "two adjacent statements of a block swapped",
    "early-return": "a bare `return` inserted at a block's start or before a function-level statement",
    "weak-ref": "an attribute's `set()` -> `WeakSet()`, `dict[..., Any]` -> `WeakValueDictionary()`",
    "local-ref": "`a.b.add(x)` / `.append(x)` / `a.b[k] = v` into a function-local container",
    "move-guard": "a method's leading guard moved around one call of it in the same module",
}


def _settled(run: dict[str, Any]) -> list[str]:
    """The baseline verdicts one of the unmutated copy's two runs left at a time bound."""
    settled = run.get("baselines_settled") or []
    if not settled:
        return []
    return [
        f"{len(settled)} baseline verdict{'s' if len(settled) > 1 else ''} one of the unmutated copy's "
        "two runs left `unknown` at a time bound (a deep check cut short under load), taken from the "
        "run that decided it:",
        "",
        *(f"- {note}" for note in settled),
        "",
    ]


def markdown(data: dict[str, Any], folder: Path | None = None) -> str:
    """The page, written into `folder` (its link to README.md relative to it)."""
    readme = os.path.relpath(Path(__file__).resolve().parent / "README.md", (folder or HERE).resolve())
    run, rows = data["run"], data["mutants"]
    s = summary(data)
    is_sample = bool(run["sample"]) and run["sample"] < run["generated"]
    if is_sample:
        sampled = f"a sample of {len(rows)} drawn with seed {run['seed']} from {run['generated']} generated"
    elif len(rows) < run["generated"]:
        sampled = f"{len(rows)} selected of {run['generated']} generated"
    else:
        sampled = f"all {run['generated']} generated"
    out = [
        "# Semantic mutation testing: results",
        "",
        "Generated by `bash ci/semantic_mutation.sh` (`python -m reference.mutate`); the method is in",
        f"[README.md]({readme}). Do not edit by hand: survivors' judgments live in `judgments.py`.",
        "",
        f"Measured at commit `{run['commit']}`, {run['date']}: {sampled} mutants of "
        f"{', '.join(run['variants'])}, {run['jobs']} jobs, {run['seconds']} s wall clock, "
        f"each run bounded at {run['timeout']:g} s"
        + (
            f", load average (1 min) {run['load_average'][0]:g} at the start and {run['load_average'][1]:g} "
            "at the end"
            if run.get("load_average")
            else ""
        )
        + (f", `--impl` run with `{run['impl_args']}`" if run["impl_args"] else "")
        + (
            f"; first stage `{run['prefilter_args']}`, whose survivors then got the default run"
            if run.get("prefilter_args") is not None
            else ""
        )
        + ".",
        "",
        *([run["note"], ""] if run.get("note") else []),
        *_settled(run),
        f"**{s['line']}.**",
        "",
        *[
            f"- {v}: {summary({'mutants': [r for r in rows if r['variant'] == v]}, is_sample)['line']}"
            for v in run["variants"]
        ],
        "",
        *(
            [
                "Detected per stage: "
                + ", ".join(
                    f"{stage}: {n}"
                    for stage, n in sorted(
                        Counter(r["stage"] for r in rows if r["stage"] and r["status"] in DETECTED).items()
                    )
                )
                + ".",
                "",
            ]
            if run.get("prefilter_args") is not None and any(r["stage"] for r in rows)
            else []
        ),
        "## Operators",
        "",
        *_table(["operator", "edit"], [[f"`{k}`", v] for k, v in OPERATOR_TEXT.items()]),
        "",
        "## Per operator",
        "",
        *_table(["operator", "mutants", *STATUSES, *JUDGED], _counts_by(rows, "operator")),
        "",
        "## Per file",
        "",
        *_table(
            ["file", "mutants", *STATUSES, *JUDGED],
            _counts_by([{**r, "vf": f"{r['variant']}/{r['file']}"} for r in rows], "vf"),
        ),
        "",
        "## What told them apart",
        "",
        "Each detected mutant counted once per lesson with a differing verdict (lesson or check):",
        "",
    ]
    by_lesson: Counter = Counter()
    for r in rows:
        for lesson in r["told_apart_by"]:
            by_lesson[lesson] += 1
    out += _table(["lesson", "mutants"], [[f"`{k}`", v] for k, v in by_lesson.most_common()])
    better = [r for r in rows if r.get("only_bug_to_ok")]
    if better:
        out += [
            "",
            f"{len(better)} of the killed mutants differ only in verdicts that went from `bug` to `ok` "
            "(the edit avoids a residual bug of its variant, e.g. a fixed mutant that no longer shows "
            "bootstrap-partition's false failure): told apart, as the rule says, but a learner's run "
            "would not flag them as wrong: " + ", ".join(f"`{r['key']}`" for r in better) + ".",
        ]
    out += ["", "## Survivors", ""]
    survivors = [r for r in rows if r["status"] == "survived"]
    if not survivors:
        out.append("None.")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in survivors:
        groups.setdefault(_judgment_of(r), []).append(r)
    order = {GAP: 0, "unjudged": 1, EQ: 2}
    out += [
        "Grouped by judgment: the known gaps first (each names the check that would catch its",
        "mutants), then the equivalent mutants (each with the argument). Every survivor is listed",
        "with its diff.",
        "",
    ]
    for n, ((kind, text), members) in enumerate(sorted(groups.items(), key=lambda g: order[g[0][0]]), 1):
        label = {EQ: "Equivalent", GAP: "Known gap"}.get(kind, "UNJUDGED")
        out += [
            f"### {n}. {label} ({len(members)} mutant{'s' if len(members) > 1 else ''})",
            "",
            text + ".",
            "",
        ]
        for r in members:
            out += [
                f"- `{r['key']}` {r['variant']}/{r['file']}:{r['line']} `{r['operator']}` in "
                f"`{r['function']}`: {r['description']}",
                "",
                "  ```diff",
                *("  " + line for line in r["diff"].rstrip("\n").split("\n")),
                "  ```",
                "",
            ]
    others = [r for r in rows if r["status"] in ("timeout", "import-error", "unknown", "inconclusive")]
    if others:
        out += [
            "## Unknown, timed out, failed to import, inconclusive",
            "",
            "`inconclusive`: in the default-run stage every differing verdict became `unknown` because a",
            "deep check (bounded in wall-clock time) or the lesson hit its time bound; on a loaded",
            "machine that says nothing about the mutant, so these count neither as detected nor as",
            "survived.",
            "",
        ]
        out += _table(
            ["key", "mutant", "status", "what"],
            [
                [
                    f"`{r['key']}`",
                    f"{r['variant']}/{r['file']}:{r['line']} `{r['operator']}` {r['description']}",
                    r["status"],
                    r["note"] or "; ".join(r["differences"][:3]),
                ]
                for r in others
            ],
        )
        out.append("")
    return "\n".join(out) + "\n"


def rerender(folder: Path) -> str:
    """RESULTS.md rewritten from `folder/results.json` (after judging survivors)."""
    data = json.loads((folder / "results.json").read_text())
    (folder / "RESULTS.md").write_text(markdown(data, folder))
    return summary(data)["line"]


if __name__ == "__main__":  # python -m reference.mutate.report [FOLDER]: re-render RESULTS.md
    print(rerender(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent))
