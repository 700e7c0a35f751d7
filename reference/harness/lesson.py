"""What a lesson is, and how one lesson runs against one variant.

`run_lesson` checks that the variant provides the classes the lesson needs, times the
scenario, and turns anything that stops it from deciding (a settle timeout, an
exception from a user's variant) into an `unknown` verdict with a one-line reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

from reference.clock import SettleTimeout
from reference.harness.result import Observation, Result
from reference.transport.kits import kit
from reference.variants import RESIDUAL_LESSON_IDS, Variant

# Stable ids, used in test markers, CLI flags, JSON, tags in variant diffs, notebooks.
UPSTREAM_FIX_LESSON_IDS = ("failed-resurrect", "live-set-race", "stale-bootstrap", "task-refs")
LESSON_IDS = UPSTREAM_FIX_LESSON_IDS + RESIDUAL_LESSON_IDS


@dataclass(frozen=True)
class Options:
    transport: str = "mock"
    seed: int = 0
    repeat: int = 0  # > 0: also run the lesson's stress mode, this many trials
    backend: str = "default"  # KV data plane (reference/dataplane) for lessons that move KV bytes
    sockets: str = "upstream"  # decode PUSH-socket options (reference/transport/sockets.py)


Body = Callable[[ModuleType, Options], Observation]


@dataclass(frozen=True)
class Lesson:
    id: str
    title: str
    upstream: str
    needs: tuple[str, ...]
    body: Body
    transports: tuple[str, ...] = ("mock",)
    stress: Body | None = None
    notes: Callable[[], str] | None = None  # extra text the CLI prints when the lesson is asked for
    backends: tuple[str, ...] = ("default",)  # KV data planes it can move its bytes over
    # Components the lesson drives in separate probes (task-refs). One that a variant
    # declares unavailable (its `UNAVAILABLE`, with the reason) is not driven and the
    # lesson decides from the others; `unknown` only when no probe can run. A component
    # that is simply missing is a gap in the variant, as for `needs`.
    probes: tuple[str, ...] = ()


def run_lesson(lesson: Lesson, variant: Variant, options: Options) -> Result:
    started = time.perf_counter()
    observation = _observe(lesson, variant, options)
    return Result(
        lesson=lesson.id,
        variant=variant.name,
        transport=options.transport,
        backend="" if options.backend == "default" else options.backend,
        sockets=options.sockets,
        verdict=observation.verdict,
        expected=variant.expected_for(lesson.id),
        symptom=observation.symptom,
        seconds=time.perf_counter() - started,
        timeline=observation.timeline,
        details=observation.details,
    )


def _observe(lesson: Lesson, variant: Variant, options: Options) -> Observation:
    declared = variant.declared_unavailable(lesson.probes)
    if lesson.probes and len(declared) == len(lesson.probes):
        return Observation("unknown", "; ".join(declared.values()))
    reason = variant.unavailable(tuple(name for name in lesson.needs if name not in declared))
    if reason:
        return Observation("unknown", reason)
    if options.transport not in lesson.transports:
        return Observation("unknown", f"no {options.transport} scenario for this lesson")
    unusable = _backend_unusable(lesson, options)
    if unusable:
        return Observation("unknown", unusable)
    try:
        observation = lesson.body(variant.module, options)
        if options.repeat > 0 and lesson.stress is not None:
            observation = _with_stress(observation, lesson.stress(variant.module, options))
        return observation
    except SettleTimeout as exc:
        return Observation("unknown", f"hit its time bound: {exc}")
    except (Exception, SystemExit) as exc:  # a variant's bug must not end the whole run
        return Observation("unknown", f"scenario raised {_one_line(exc)}")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


def _backend_unusable(lesson: Lesson, options: Options) -> str:
    """Why the lesson cannot run over the asked-for KV backend here ("" when it can)."""
    if options.backend == "default":
        return ""
    if options.backend not in lesson.backends:
        return f"this lesson moves no KV bytes over backend {options.backend}"
    if kit(options.transport).in_process:
        return f"backend {options.backend} moves bytes between processes: use --transport loopback"
    from reference.dataplane import discovery  # optional backends are probed only when asked

    status = discovery.backend_status(options.backend)
    return "" if status.usable else f"backend {options.backend} unavailable: {status.reason}"


def _with_stress(verdict: Observation, stress: Observation) -> Observation:
    """The hooked scenario decides; the stress run adds how often the race fired."""
    details = {**verdict.details, "stress": stress.details}
    symptom = f"{verdict.symptom} | stress: {stress.symptom}"
    return Observation(verdict.verdict, symptom, verdict.timeline, details)
