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
from collections.abc import Callable, Sequence
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


def run_impl(
    package: Path, lessons: Sequence[str], timeout: float, extra: Sequence[str] = (), flag: str = "--impl"
) -> tuple[str, Verdicts, str]:
    """(status, verdicts, note) of one `--impl` run (or `flag`, e.g. `--sglang TREE`):
    status `ran`, `timeout` or `import-error`."""
    cmd = [sys.executable, "-m", "reference", flag, str(package), "--json", *extra]
    for lesson in lessons:
        cmd += ["--lesson", lesson]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", {}, f"no result within {timeout:g} s"
    try:  # exit 0, 1 or (some verdict unknown) 2 with the JSON on stdout
        payload = json.loads(done.stdout)
    except ValueError:  # `--impl` could not load the copy: one line on stderr, exit 2
        lines = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()
        return "import-error", {}, lines[-1][:300]
    return "ran", _verdicts(payload), _unknown_symptoms(payload)


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
        runs = [run_impl(package, lessons, self.timeout, self.stages[stage]) for _ in range(2)]
        shutil.rmtree(package, ignore_errors=True)
        for status, _, note in runs:
            if status != "ran":
                raise RunError(f"unmutated {variant} on {', '.join(lessons)}: {status} {note}")
        if runs[0][1] != runs[1][1]:
            raise RunError(f"unmutated {variant} on {', '.join(lessons)}: verdicts differ between two runs")
        return runs[0][1]

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
