"""Judging a mutant: a copy of its variant package with the one edited module, run as
`python -m reference --impl COPY --json --lesson L ...` over the lessons its module's
classes take part in, and compared verdict by verdict (each lesson's and each of its
checks') with the same run of the unmutated copy.

Outcomes: `killed` (some verdict differs, none of them `unknown`), `unknown` (some
verdict became `unknown`: the run could not decide, e.g. a check hit its time bound or
the mutant raised inside a scenario), `timeout` (the whole run passed its wall-clock
bound), `import-error` (`--impl` could not load the copy), `survived` (every verdict
equal).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from reference.mutate.mutants import ROOT, Mutant, variant_files

Verdicts = dict[str, str]  # "lesson" and "lesson/check" -> verdict


@dataclass
class Outcome:
    mutant: Mutant
    status: str  # killed, unknown, timeout, import-error, survived, inconclusive
    seconds: float
    differences: list[str] = field(default_factory=list)  # "lesson/check: ok -> bug"
    note: str = ""
    stage: str = ""  # which stage told it apart, when there are two


class RunError(Exception):
    """The baseline run of an unmutated copy did not give verdicts."""


def _copy(variant: str, workdir: Path, name: str, edited: tuple[str, str] | None) -> Path:
    """The variant package copied under `workdir/name`, one file replaced by `edited`."""
    target = workdir / name
    target.mkdir(parents=True)
    for path in (ROOT / "reference" / variant).glob("*.py"):
        shutil.copyfile(path, target / path.name)
    if edited is not None:
        (target / edited[0]).write_text(edited[1])
    return target


def _verdicts(payload: dict) -> Verdicts:
    found: Verdicts = {}
    for result in payload["results"]:
        found[result["lesson"]] = result["verdict"]
        for check in result.get("checks", ()):
            found[f"{result['lesson']}/{check['id']}"] = check["verdict"]
    return found


def run_reference(args: Sequence[str], timeout: float, key: str = "results") -> tuple[str, dict, str]:
    """(status, payload, note) of one `python -m reference ARGS` child whose stdout is JSON
    with `key` in it: status `ran` (the parsed JSON), `timeout` (no result within `timeout`
    seconds) or `error` (no such JSON: the note is the child's last line, e.g. an `--impl`
    that could not load)."""
    cmd = [sys.executable, "-m", "reference", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", {}, f"no result within {timeout:g} s"
    try:  # the exit status follows the verdicts' expectations; the result is the JSON
        payload = json.loads(done.stdout)
        if isinstance(payload, dict) and key in payload:
            return "ran", payload, ""
    except ValueError:
        pass
    lines = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()
    return "error", {}, lines[-1][:300]


def impl_payload(
    package: Path, lessons: Sequence[str], timeout: float, extra: Sequence[str] = (), flag: str = "--impl"
) -> tuple[str, dict, str]:
    """(status, JSON payload, note) of one `--impl` run (or `flag`, e.g. `--sglang TREE`):
    status `ran`, `timeout` or `import-error` (`--impl` could not load the copy)."""
    args = [flag, str(package), "--json", *extra]
    for lesson in lessons:
        args += ["--lesson", lesson]
    status, payload, note = run_reference(args, timeout)
    return ("import-error" if status == "error" else status), payload, note


def run_impl(
    package: Path, lessons: Sequence[str], timeout: float, extra: Sequence[str] = (), flag: str = "--impl"
) -> tuple[str, Verdicts, str]:
    """(status, verdicts, note) of one `--impl` run (`impl_payload`); the note of a run
    that ran says what its undecided checks said."""
    status, payload, note = impl_payload(package, lessons, timeout, extra, flag)
    if status != "ran":
        return status, {}, note
    return "ran", _verdicts(payload), _unknown_symptoms(payload)


Said = dict[str, tuple[str, str, dict[str, tuple[str, str]]]]  # lesson -> (verdict, symptom, checks)


def _said(payload: dict) -> Said:
    """Per lesson, its verdict and symptom and each of its checks' (id -> verdict, symptom)."""
    return {
        r["lesson"]: (
            r["verdict"],
            r.get("symptom", ""),
            {c["id"]: (c["verdict"], c.get("symptom", "")) for c in r.get("checks", ())},
        )
        for r in payload["results"]
    }


def _bounded(said: tuple[str, str] | None) -> bool:
    """An undecided verdict whose run said it ran out of time (`TIME_BOUNDS`)."""
    return said is not None and said[0] == "unknown" and any(bound in said[1] for bound in TIME_BOUNDS)


def _lesson_verdict(checks: Iterable[str]) -> str:
    """A lesson's verdict from its checks' (as `reference/harness/checks.py: overall`)."""
    found = set(checks)
    for verdict in ("bug", "unknown", "latent"):
        if verdict in found or (verdict == "unknown" and not found):
            return verdict
    return "ok"


def _differs(key: str, first: tuple[str, str] | None, second: tuple[str, str] | None) -> str:
    """`key: a -> b (run 1: symptom; run 2: symptom)`."""
    verdicts = [("absent", "") if said is None else said for said in (first, second)]
    notes = "; ".join(f"run {i}: {(symptom or '(none)')[:200]}" for i, (_, symptom) in enumerate(verdicts, 1))
    return f"{key}: {verdicts[0][0]} -> {verdicts[1][0]} ({notes})"


def _agree_checks(
    lesson: str, first: dict[str, tuple[str, str]], second: dict[str, tuple[str, str]]
) -> tuple[Verdicts, list[str], list[str]]:
    """One lesson's checks in two runs: (agreed verdicts, settled, differing); a check one
    run left `unknown` at a time bound takes the verdict the other run decided."""
    agreed: Verdicts = {}
    settled: list[str] = []
    differing: list[str] = []
    for check in dict.fromkeys([*first, *second]):
        a, b = first.get(check), second.get(check)
        key = f"{lesson}/{check}"
        if a is not None and b is not None and a[0] == b[0]:
            agreed[key] = a[0]
        elif a is not None and b is not None and (_bounded(a) or _bounded(b)) and "unknown" in (a[0], b[0]):
            agreed[key] = b[0] if _bounded(a) else a[0]  # one run cut short, the other decided
            settled.append(_differs(key, a, b))
        else:
            differing.append(_differs(key, a, b))
    return agreed, settled, differing


def _whole_bound(said: tuple[str, str, dict] | None) -> bool:
    """The lesson as a whole hit its time bound (its worker killed: no checks came back)."""
    return said is not None and not said[2] and _bounded(said[:2])


def agree(first: dict, second: dict) -> tuple[Verdicts, list[str], list[str]]:
    """The baseline two runs' payloads of one unmutated copy give, per lesson and check:
    (verdicts, settled, differing). Where one run left a check (or a whole lesson)
    `unknown` at a time bound and the other decided it, the decided verdict counts (a
    deep check cut short under load says nothing about the copy) and the lesson's verdict
    follows its checks'; such a difference is `settled`. Every other difference is
    `differing` ("key: a -> b (run 1: what it said; run 2: ...)"): a verdict that is not
    deterministic, which would pass for a kill."""
    said = _said(first), _said(second)
    verdicts: Verdicts = {}
    settled: list[str] = []
    differing: list[str] = []
    for lesson in dict.fromkeys([*said[0], *said[1]]):
        a, b = said[0].get(lesson), said[1].get(lesson)
        if a is None or b is None:
            differing.append(_differs(lesson, a and a[:2], b and b[:2]))
            continue
        if _whole_bound(a) != _whole_bound(b):
            settled.append(_differs(lesson, a[:2], b[:2]))
            a = b = b if _whole_bound(a) else a
        checks, settled_here, differing_here = _agree_checks(lesson, a[2], b[2])
        if a[0] != b[0] and not settled_here and not differing_here:  # no check says why
            differing.append(_differs(lesson, a[:2], b[:2]))
        verdicts[lesson] = _lesson_verdict(checks.values()) if a[2] else a[0]
        verdicts.update(checks)
        settled += settled_here
        differing += differing_here
    return verdicts, settled, differing


def _unknown_symptoms(payload: dict) -> str:
    """What the checks that could not decide said (a bound hit, an exception), in short."""
    found = []
    for result in payload["results"]:
        checks = [c for c in result.get("checks", ()) if c["verdict"] == "unknown"]
        if result["verdict"] == "unknown" and not checks:  # the lesson as a whole, e.g. its bound
            found.append(f"{result['lesson']}: {result.get('symptom', '')[:160]}")
        found += [f"{result['lesson']}/{c['id']}: {c.get('symptom', '')[:160]}" for c in checks]
    return " | ".join(found[:3])


# How an undecided check says it ran out of time: the lesson's bound, an exploration that
# stopped at its share of the budget, the simulation's planned runs cut short.
TIME_BOUNDS = ("time bound", "cut at its bound", "but stopped at the", "the time ran out")


def only_bounds(diffs: list[str], note: str) -> bool:
    """Every differing verdict became `unknown` and every undecided check hit a time bound."""
    return all(d.endswith("-> unknown") or d.endswith("-> absent") for d in diffs) and all(
        any(bound in part for bound in TIME_BOUNDS) for part in note.split(" | ")
    )


def compare(baseline: Verdicts, got: Verdicts) -> tuple[str, list[str]]:
    """`killed`, `unknown` or `survived`, and every verdict that differs."""
    diffs = [
        f"{key}: {baseline.get(key, 'absent')} -> {got.get(key, 'absent')}"
        for key in sorted(set(baseline) | set(got))
        if baseline.get(key) != got.get(key)
    ]
    if not diffs:
        return "survived", []
    became_unknown = any(
        got.get(k) == "unknown" for k in set(baseline) | set(got) if baseline.get(k) != got.get(k)
    )
    return ("unknown" if became_unknown else "killed"), diffs


class Judge:
    """Runs mutants against baselines computed once per (stage, variant, lessons).

    `stages` are the `--impl` runs' extra arguments, cheapest first: a mutant a stage
    tells apart is judged there; a survivor goes on to the next stage, and the last one
    (the default run) decides. A cheaper stage that is a part of a later one (`--quick`
    runs the story and the checks, the default run those and the deep checks) kills
    nothing the later one would not: the same deterministic checks give the same
    verdicts in both."""

    def __init__(
        self,
        timeout: float = 120.0,
        extra: Sequence[str] = (),
        workdir: Path | None = None,
        prefilter: Sequence[str] | None = None,
    ) -> None:
        self.timeout = timeout
        self.stages = [tuple(extra)] if prefilter is None else [(*extra, *prefilter), tuple(extra)]
        self._own = workdir is None
        self.workdir = Path(tempfile.mkdtemp(prefix="semantic-mutants-")) if workdir is None else workdir
        self.baselines: dict[tuple[int, str, tuple[str, ...]], Verdicts] = {}
        # Baseline verdicts one of the two runs left at a time bound, taken from the other.
        self.settled: list[str] = []
        self._lock = threading.Lock()
        self._copies = 0

    def close(self) -> None:
        if self._own:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def baseline(self, variant: str, lessons: tuple[str, ...], stage: int = -1) -> Verdicts:
        stage %= len(self.stages)
        key = (stage, variant, lessons)
        with self._lock:
            known = self.baselines.get(key)
        if known is None:
            self._baseline_for(variant, lessons, stage)
        return self.baselines[key]

    def _baseline_run(self, variant: str, lessons: tuple[str, ...], stage: int) -> Verdicts:
        """The unmutated copy's verdicts, from two runs that must agree (a verdict that
        varied would pass for a kill)."""
        with self._lock:
            self._copies += 1
            name = f"unmutated_{variant}_{self._copies}"
        package = _copy(variant, self.workdir, name, None)
        runs = [impl_payload(package, lessons, self.timeout, self.stages[stage]) for _ in range(2)]
        shutil.rmtree(package, ignore_errors=True)
        stage_name = " ".join(self.stages[stage]) or "default run"
        what = f"unmutated {variant} on {', '.join(lessons)} ({stage_name})"
        for status, _, note in runs:
            if status != "ran":
                raise RunError(f"{what}: {status} {note}")
        verdicts, settled, differing = agree(runs[0][1], runs[1][1])
        if differing:
            more = f" (+{len(differing) - 3} more)" if len(differing) > 3 else ""
            raise RunError(f"{what}: verdicts differ between two runs: {' | '.join(differing[:3])}{more}")
        with self._lock:
            self.settled += [f"{what}: {note}" for note in settled]
        return verdicts

    def judge(self, mutant: Mutant) -> Outcome:
        package = _copy(
            mutant.variant, self.workdir, f"mutant_{mutant.key}", (mutant.file, mutant.edit.source)
        )
        seconds = 0.0
        try:
            for stage, extra in enumerate(self.stages):
                baseline = self.baseline(mutant.variant, mutant.lessons, stage)
                start = time.monotonic()
                status, verdicts, note = run_impl(package, mutant.lessons, self.timeout, extra)
                seconds += time.monotonic() - start
                where = (
                    f"stage {stage + 1} ({' '.join(extra) or 'default run'})" if len(self.stages) > 1 else ""
                )
                if status != "ran":
                    return Outcome(mutant, status, seconds, note=note, stage=where)
                verdict, diffs = compare(baseline, verdicts)
                if verdict == "killed" and all(d.endswith(": unknown -> ok") for d in diffs):
                    continue  # the baseline left these undecided (both its runs): no evidence
                if verdict == "unknown" and stage > 0 and only_bounds(diffs, note):
                    # A deep check bounded in wall-clock time that ran out under load
                    # says nothing about the mutant: reported apart, counted nowhere.
                    return Outcome(mutant, "inconclusive", seconds, diffs, note=note, stage=where)
                if verdict != "survived":
                    return Outcome(mutant, verdict, seconds, diffs, note=note, stage=where)
            return Outcome(mutant, "survived", seconds)
        finally:
            shutil.rmtree(package, ignore_errors=True)

    def judge_all(
        self, mutants: Sequence[Mutant], jobs: int = 2, progress: Callable[[Outcome], None] | None = None
    ) -> list[Outcome]:
        def one(mutant: Mutant) -> Outcome:
            outcome = self.judge(mutant)
            if progress is not None:
                progress(outcome)
            return outcome

        keys = [
            (variant, lessons, stage)
            for variant, lessons in dict.fromkeys((m.variant, m.lessons) for m in mutants)
            for stage in range(len(self.stages))
        ]
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(lambda key: self._baseline_for(*key), keys))  # all baselines first
            return list(pool.map(one, mutants))

    def _baseline_for(self, variant: str, lessons: tuple[str, ...], stage: int) -> None:
        verdicts = self._baseline_run(variant, lessons, stage)
        with self._lock:
            self.baselines.setdefault((stage % len(self.stages), variant, lessons), verdicts)


def unmutated_sources(variant: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in variant_files(variant)}
