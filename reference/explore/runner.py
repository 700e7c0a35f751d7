"""Run a property under frontrun's DPOR explorer and turn the outcome into a finding.

`explore(prop, variant)` explores every interleaving of the property's threads up to
its preemption bound (no hook points anywhere) and returns:

- `bug`: a counterexample: the schedule (replayable with `replay`), the problems the
  property's check saw after it, and the two-lane trace of the accesses in it;
- `ok`: "holds over all N interleavings (exhaustive)", or "holds over N interleavings
  (preemption bound B)" for a property that bounds its search;
- `unknown`: the variant lacks a component, raised while building the world, or the
  exploration was inconclusive (it hit its time bound before finishing).

frontrun must be active in this process (`frontrun python ...`, a preload library plus
an environment variable); `python -m reference --explore` arranges that itself (cli.py).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal, TypeVar

from reference.explore.property import Property, guarded
from reference.explore.trace import encode, two_lanes
from reference.variants import Variant

Verdict = Literal["bug", "ok", "unknown"]
# seconds one exploration may take; REFERENCE_EXPLORE_SECONDS changes it (an exhaustive search
# of upstream 0.5.23's failure handler needs 959 interleavings, about 32 s on an idle core)
TIME_BOUND = float(os.environ.get("REFERENCE_EXPLORE_SECONDS", "30"))
RUN_BOUND = 5.0  # seconds one interleaving may take (a deadlock ends sooner)
SETUP_BOUND = 10.0  # seconds building one world may take, checked once before exploring
UNHARDENED = ("buggy", "fixed")  # shipped variants a `hardened_only` property is not judged on
T = TypeVar("T")


@dataclass
class Finding:
    lesson: str
    property: str
    variant: str
    verdict: Verdict
    expected: str | None  # None: a property the upstream fix does not claim, or hardened-only on buggy/fixed
    claimed: bool
    symptom: str
    interleavings: int
    bound: int | None  # None: no preemption bound, the search was exhaustive
    seconds: float
    schedule: str | None = None
    trace: str | None = None

    def as_expected(self) -> bool:
        return self.expected is None or self.verdict == self.expected

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def frontrun_active() -> bool:
    try:
        from frontrun.cli import is_active
    except ImportError:
        return False
    return is_active()


class Hung(Exception):
    """`bounded` ran out of time; the message is one line."""


def bounded(call: Callable[[], T], seconds: float, what: str) -> T:
    """`call()` on a daemon thread, so a variant that hangs costs `seconds`, not the run.

    The thread is left running when it hangs (a thread cannot be stopped); the process
    ends anyway, and the explorations after it never share its world.
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, name=f"bounded {what}", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise Hung(f"hit its time bound ({seconds:g} s) in {what}")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _workers(prop: Property) -> list[Any]:
    return [guarded(lane, body) for lane, body in prop.workers]


def explore(
    prop: Property, variant: Variant, setup_bound: float = SETUP_BOUND, time_bound: float = TIME_BOUND
) -> Finding:
    """`time_bound`: seconds the search may take (the default run gives each exploration
    its share of `--budget`, reference/harness/deep.py); one that stops there is `unknown`."""
    import frontrun

    judged = prop.claimed and not (prop.hardened_only and variant.name in UNHARDENED)
    expected = _expected(variant, prop.lesson) if judged else None

    def finding(verdict: Verdict, symptom: str, count: int = 0, **extra: Any) -> Finding:
        return Finding(prop.lesson, prop.id, variant.name, verdict, expected, prop.claimed, symptom,
                       count, prop.bound, round(time.perf_counter() - start, 3), **extra)  # fmt: skip

    start = time.perf_counter()
    missing = variant.unavailable(prop.needs)
    if missing:
        return finding("unknown", f"cannot explore: {missing}")
    module = variant.module
    try:
        bounded(lambda: prop.setup(module), setup_bound, "building the world")  # unknown, not a bug
    except Hung as exc:
        return finding("unknown", str(exc))
    except Exception as exc:
        return finding("unknown", f"variant raised while building the world: {type(exc).__name__}: {exc}")
    searching = time.perf_counter()
    try:
        result = frontrun.explore(
            setup=lambda: prop.setup(module),
            workers=_workers(prop),
            invariant=lambda state: not prop.check(state),
            preemption_bound=prop.bound,
            max_executions=prop.max_executions,
            total_timeout=time_bound,
            timeout_per_run=RUN_BOUND,
            detect_io=False,
            reproduce_on_failure=3,
        )
    except Exception as exc:
        return finding("unknown", f"exploration failed: {type(exc).__name__}: {exc}")
    count = result.num_explored
    if result.property_holds is None:
        return finding(
            "unknown", f"inconclusive after {count} interleavings: {result.inconclusive_reason}", count
        )
    # frontrun stops at its deadline between interleavings and says nothing: a search that
    # ran that long may have stopped short, so it is not `ok`.
    if result.property_holds and time.perf_counter() - searching >= time_bound:
        return finding(
            "unknown",
            f"no counterexample in {count} interleavings, but stopped at the {time_bound:.3g} s bound",
            count,
        )
    if result.property_holds:
        return finding("ok", f"holds over {_over(count, prop.bound)}", count)
    schedule = list(result.counterexample or [])
    problems, trace = replay(prop, variant, schedule)
    bound = "" if prop.bound is None else f" (bound {prop.bound})"
    where = f"after {count} interleavings{bound}, reproduced "
    where += f"{result.reproduction_successes}/{result.reproduction_attempts}"
    symptom = "; ".join(problems) if problems else "invariant failed during exploration, not on replay"
    return finding("bug", f"{symptom} [{where}]", count, schedule=encode(schedule), trace=trace)


def _expected(variant: Variant, lesson: str) -> str:
    """A lesson `latent` on this variant (an upstream release whose wiring never runs the
    racing threads together) expects `bug` of its exploration, which runs them together,
    as `--provoke` does."""
    expected = variant.expected_for(lesson)
    return "bug" if expected == "latent" else expected


def _over(count: int, bound: int | None) -> str:
    if bound is None:
        return f"all {count} interleavings (exhaustive)"
    return f"{count} interleavings (preemption bound {bound})"


def replay(prop: Property, variant: Variant, schedule: list[int]) -> tuple[list[str], str]:
    """Run one schedule again, recording accesses: the problems seen, and the trace."""
    from frontrun._dpor_runtime.replay import _run_dpor_schedule
    from frontrun._trace_format import TraceRecorder

    recorder = TraceRecorder()
    module = variant.module
    state = _run_dpor_schedule(
        schedule, lambda: prop.setup(module), _workers(prop), timeout=RUN_BOUND,
        detect_io=False, trace_recorder=recorder,
    )  # fmt: skip
    lanes = [f"T{i} {lane}" for i, (lane, _) in enumerate(prop.workers)]
    problems = prop.check(state)
    outcome = "; ".join(problems) if problems else "the property holds"
    return problems, f"{two_lanes(recorder.events, lanes)}\n\nafter this interleaving: {outcome}"
