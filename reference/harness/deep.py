"""The deep checks of the default run: explorations as checks, and the time budget they share.

`python -m reference --impl X` runs each lesson's story, its hand-built checks and its
deep checks (`Check.deep`: the seeded simulation, `reference/sim/`, and the frontrun DPOR
explorations, `reference/explore/`); `--quick` leaves the deep ones out. This module:

- `exploration_checks(lesson_id)`: one deep check per exploration property the upstream
  fix claims (`explore-<property>`), run on the variant's own code with no hooks. A
  property the fix does not claim (a residual upstream still has) stays in
  `--explore`, where it is reported, not judged.
- the budget: `lesson_budgets` splits the run's `--budget` over the selected lessons in
  proportion to their deep checks (the CLI gives each lesson its `Options.budget`; the
  library's default, 0, runs none). The simulation takes its fixed share of the lesson's
  budget (`reference/sim/check.py`); `within(lesson, check, options)` gives one
  exploration its fair share of the rest (what the explorations have left divided by
  those still to run) and records what it spent, so one that finishes early leaves its
  time to the ones after it.
- `replay_file(path)`: `python -m reference --replay FILE`, a saved simulation
  counterexample (`reference.sim.replay`).

An exploration first runs with a preemption bound of 1 (every check-then-act race needs
one preemption, and it finishes on every shipped variant in about a second); for a
property with no bound of its own, it then searches every interleaving with what its
share has left. `ok` says which it finished: "all N interleavings (exhaustive)", or
"N interleavings (preemption bound 1)" plus where the exhaustive search stopped. A
search that stops at its time bound before finishing its round-1 bound is `unknown`,
never `ok`.

frontrun's `explore()` refuses to run unless `FRONTRUN_ACTIVE=1` is in the environment
(what `frontrun python ...` sets, with its preload library). The library intercepts
libc I/O only for frontrun's I/O detection, which the explorations turn off
(`detect_io=False`): the findings, interleaving counts included, are the same with and
without it (measured on buggy and fixed, every property). So the deep check sets
`FRONTRUN_ACTIVE=1` in its own process for the length of the exploration and restores it
after, in a forked worker, `--in-process` or pytest alike; `--explore` still re-executes
itself under frontrun's full environment.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Protocol

from reference.explore import PROPERTIES
from reference.explore.property import Property
from reference.explore.runner import Finding, explore
from reference.harness.checks import Body, Check
from reference.harness.options import Options
from reference.harness.result import Observation
from reference.variants import SHIPPED, Variant


class Lesson(Protocol):
    """What the budget reads of a lesson (`reference/harness/lesson.py` imports this module)."""

    @property
    def id(self) -> str: ...

    @property
    def checks(self) -> tuple[Check, ...]: ...


PREFIX = "explore-"
DEFAULT_BUDGET = 60.0  # seconds of deep checks per variant; the simulation overruns its share by up to
# half (its shrinking), so a variant's whole default run stays under 90 s on 2 shared cores
FIRST_BOUND = 1  # the first round's preemption bound
MIN_DEEPER = 0.5  # seconds a share must have left to try the exhaustive round
RESERVE = 0.4  # seconds a first round leaves for each exploration after it, when it borrows (most
# of a lesson's explorations finish within it: their time goes to the slow ones)
PROG = "python -m reference"
SOURCES = {
    "failed-resurrect": "https://github.com/sgl-project/sglang/pull/24539",
    "failure-records": "HARDEN(failure-records), residual after https://github.com/sgl-project/sglang/pull/24539",
    "late-kv-write": "HARDEN(late-kv-write), residual of every fix",
    "live-set-race": "https://github.com/sgl-project/sglang/pull/36351",
    "restart-recovery": "HARDEN(restart-recovery), residual after https://github.com/sgl-project/sglang/pull/36029",
    "stale-bootstrap": "https://github.com/sgl-project/sglang/pull/36029",
    "stale-tracker": "HARDEN(stale-tracker), residual after https://github.com/sgl-project/sglang/pull/36351",
}


def exploration_checks(lesson_id: str) -> tuple[Check, ...]:
    """The lesson's claimed exploration properties, each a deep check."""
    module = lesson_id.replace("-", "_")
    return tuple(
        Check(
            id=PREFIX + prop.id,
            claim=prop.claim,
            source=f"frontrun DPOR, reference/explore/{module}.py; {SOURCES[lesson_id]}",
            body=_body(prop),
            needs=prop.needs,
            deep=True,
        )
        for prop in PROPERTIES.get(lesson_id, ())
        if prop.claimed
    )


def runs_on(check: Check, variant: Variant) -> bool:
    """False for an exploration on an upstream release (`--sglang`, a variant with a
    `DECIDE`): the adapter's verdicts follow upstream's history, which the lesson checks
    judge; `--explore --sglang` runs the explorations there, reported as found."""
    return not (check.id.startswith(PREFIX) and getattr(variant.module, "DECIDE", None) is not None)


def _body(prop: Property) -> Body:
    def body(module: ModuleType, options: Options) -> Observation:
        check_id = PREFIX + prop.id
        most = ceiling(prop.lesson, check_id, options)
        with within(prop.lesson, check_id, options) as seconds:
            return observe(explore_within(prop, module, seconds, most))

    return body


def explore_within(prop: Property, module: ModuleType, seconds: float, most: float = 0.0) -> Finding:
    """Bound 1 first, then (a property without its own bound) exhaustive with what is left
    of `seconds`. The first round may take up to `most` (borrowed from the explorations
    after it, which mostly finish early) so that a loaded machine does not cut it."""
    from reference.explore.runner import frontrun_active

    variant = Variant(module.__name__, module, "ok")
    start = time.perf_counter()
    with _frontrun_env():
        if not frontrun_active():
            return _unrun(prop, variant, "needs frontrun (pip install frontrun==0.7.0, the test extra)")
        first_bound = max(seconds, most)
        if prop.bound is not None:
            return explore(prop, variant, time_bound=first_bound)
        first = explore(dataclasses.replace(prop, bound=FIRST_BOUND), variant, time_bound=first_bound)
        left = seconds - (time.perf_counter() - start)
        if first.verdict != "ok":
            return first
        if left < MIN_DEEPER:
            return _noted(
                first, start, f"no time left in its {seconds:.3g} s share for the exhaustive search"
            )
        deeper = explore(prop, variant, time_bound=left)
        if deeper.verdict != "unknown":
            deeper.seconds = round(time.perf_counter() - start, 3)
            return deeper
        where = f"the exhaustive search stopped after {deeper.interleavings} interleavings at {left:.3g} s"
        return _noted(first, start, where)


def _noted(finding: Finding, start: float, note: str) -> Finding:
    finding.symptom += f"; {note}"
    finding.seconds = round(time.perf_counter() - start, 3)
    return finding


def _unrun(prop: Property, variant: Variant, why: str) -> Finding:
    return Finding(prop.lesson, prop.id, variant.name, "unknown", None, True, why, 0, prop.bound, 0.0)


@contextlib.contextmanager
def _frontrun_env() -> Iterator[None]:
    """`FRONTRUN_ACTIVE=1` for the length of one exploration (see the module docstring)."""
    before = os.environ.get("FRONTRUN_ACTIVE")
    os.environ["FRONTRUN_ACTIVE"] = "1"
    try:
        import frontrun  # noqa: F401
    except ImportError:
        os.environ.pop("FRONTRUN_ACTIVE")
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("FRONTRUN_ACTIVE", None)
        else:
            os.environ["FRONTRUN_ACTIVE"] = before


def observe(finding: Finding) -> Observation:
    """The check's verdict and one-line symptom; a counterexample with its replay command."""
    details = {"exploration": finding.to_json()}
    symptom = f"{finding.symptom} ({finding.seconds:.2f} s)"
    if finding.verdict == "bug" and finding.schedule:
        symptom += f"; replay: {replay_command(finding)}"
    return Observation(finding.verdict, symptom, [], details)


def replay_command(finding: Finding) -> str:
    return (
        f"{PROG} --explore --lesson {finding.lesson} --property {finding.property} "
        f"{_variant_flag(finding.variant)} --replay {finding.schedule}"
    )


def _variant_flag(module_name: str) -> str:
    for name, (shipped_module, _) in SHIPPED.items():
        if module_name == shipped_module:
            return f"--variant {name}"
    path = getattr(sys.modules.get(module_name), "__file__", None)
    if "." in module_name or not path:  # a dotted name imports as given
        return f"--impl {module_name}"
    path = os.path.dirname(path) if os.path.basename(path) == "__init__.py" else path
    return f"--impl {os.path.relpath(path)}"  # loaded from a path


# --- the budget ---


@dataclass
class _Ledger:
    done: set[str] = field(default_factory=set)
    spent: float = 0.0


_LEDGERS: dict[str, _Ledger] = {}


def deep_checks(lesson: Lesson, options: Options) -> list[Check]:
    """The lesson's deep checks a run with these options runs once it has a budget (none
    with `--quick`)."""
    if options.quick:
        return []
    return [
        c
        for c in lesson.checks
        if c.deep and options.transport in c.transports and options.check in (None, c.id)
    ]


def lesson_budgets(
    lessons: Sequence[Lesson], total: float, options: Options, every: Iterable[Lesson] = ()
) -> dict[str, float]:
    """Each of `lessons` its part of `total`, the seconds for `every` lesson: in proportion
    to the deep checks it runs among all of theirs (a run of one lesson takes its part,
    not the whole)."""
    known = {lesson.id: lesson for lesson in (*every, *lessons)}
    checks = sum(len(deep_checks(lesson, options)) for lesson in known.values())
    return {
        lesson.id: total * len(deep_checks(lesson, options)) / checks if checks else 0.0 for lesson in lessons
    }


def share(lesson_id: str, check_id: str, options: Options) -> float:
    """Seconds exploration `check_id` may take: what the lesson's explorations have left
    over the explorations still to run. They have the lesson's budget less the
    simulation's share (`reference/sim/check.py: share_of`) when it runs too.

    A lesson run is its explorations in order; a check seen again starts a new run."""
    from reference.sim.check import CHECK_ID, share_of
    from reference.sim.profiles import PROFILES  # the lessons that have a simulation check

    ledger = _LEDGERS.get(lesson_id)
    if ledger is None or check_id in ledger.done:
        ledger = _LEDGERS[lesson_id] = _Ledger()
    simulated = lesson_id in PROFILES and options.check in (None, CHECK_ID)
    pool = options.budget * (1.0 - share_of(lesson_id)) if simulated else options.budget
    return max(0.0, pool - ledger.spent) / len(_remaining(lesson_id, check_id, options))


def _remaining(lesson_id: str, check_id: str, options: Options) -> list[str]:
    """The explorations of this lesson run still to run, `check_id` included."""
    ids = [PREFIX + p.id for p in PROPERTIES.get(lesson_id, ()) if p.claimed]
    done = _LEDGERS[lesson_id].done
    return [i for i in ids if options.check in (None, i) and i not in done] or [check_id]


def ceiling(lesson_id: str, check_id: str, options: Options) -> float:
    """The most exploration `check_id`'s first round may take: what the explorations have
    left, less `RESERVE` seconds for each one still to run after it."""
    fair = share(lesson_id, check_id, options)  # also opens this lesson run's ledger
    left = len(_remaining(lesson_id, check_id, options))
    return max(fair, fair * left - RESERVE * (left - 1))


@contextlib.contextmanager
def within(lesson_id: str, check_id: str, options: Options) -> Iterator[float]:
    """Run one deep check in its share (the seconds it yields); records what it spent."""
    seconds = share(lesson_id, check_id, options)
    start = time.perf_counter()
    try:
        yield seconds
    finally:
        ledger = _LEDGERS[lesson_id]
        ledger.done.add(check_id)
        ledger.spent += time.perf_counter() - start


# --- python -m reference --replay FILE ---


def replay_file(path: str, resolve: Callable[[dict[str, str]], ModuleType | None] | None = None) -> int:
    """Replay a saved simulation counterexample; a bad FILE is one line on stderr, exit 2.
    `resolve`: the CLI's loader for a variant the simulation cannot load itself (upstream's)."""
    if not os.path.isfile(path):
        return _error(f"--replay: no such file: {path} (a schedule replays with --explore)")
    try:
        from reference.sim.replay import replay_file as replay  # the simulation, reference/sim
    except ImportError as exc:
        return _error(f"--replay FILE needs the simulation (reference.sim.replay): {exc}")
    try:
        return replay(path, resolve=resolve)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        text = " ".join(str(exc).split())[:300]
        return _error(f"--replay: cannot replay {path}: {type(exc).__name__}: {text}")


def _error(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2
