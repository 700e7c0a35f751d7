"""What a lesson is, and how one lesson runs against one variant.

A lesson is a hooked scenario that tells its story (`body`) plus a checklist of the
properties its upstream fix guarantees (`checks`, see `checks.py`). `run_lesson` runs
the story and every check that has a scenario for the transport asked for; `run_check`
runs one. Each checks that the variant provides the members it drives, is timed, and
turns anything that stops it from deciding (a settle timeout, an exception from a
user's variant) into an `unknown` verdict with a one-line reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reference.clock import SettleTimeout
from reference.harness import deep
from reference.harness.checks import STORY, Body, Check, overall, summary
from reference.harness.options import Options
from reference.harness.result import CheckResult, Observation, Result
from reference.transport import runs_on
from reference.transport.kits import kit
from reference.variants import RESIDUAL_LESSON_IDS, Variant

# Stable ids, used in test markers, CLI flags, JSON, tags in variant diffs, notebooks.
UPSTREAM_FIX_LESSON_IDS = ("failed-resurrect", "live-set-race", "stale-bootstrap", "task-refs")
LESSON_IDS = UPSTREAM_FIX_LESSON_IDS + RESIDUAL_LESSON_IDS


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
    checks: tuple[Check, ...] = ()  # the checklist, after the story

    def checklist(self, transport: str) -> tuple[Check, ...]:
        """The story and the checks that have a scenario on `transport`."""
        story = Check(STORY, self.title, self.upstream, self.body, self.needs, self.transports)
        return tuple(c for c in (story, *self.checks) if runs_on(c.transports, transport))

    def check(self, check_id: str) -> Check:
        for candidate in (*self.checklist("mock"), *self.checklist("loopback")):
            if candidate.id == check_id:
                return candidate
        raise KeyError(check_id)


def run_lesson(lesson: Lesson, variant: Variant, options: Options) -> Result:
    """The lesson's checklist (or only `options.check`) against `variant`, as one result."""
    started = time.perf_counter()
    chosen = [
        c
        for c in lesson.checklist(options.transport)
        if options.check in (None, c.id)
        and not _declared_out(lesson, c, variant)
        and (options.deep or not c.deep)
        and deep.runs_on(c, variant)
        and offers(variant, c)
    ]
    checks = [run_check(lesson, check, variant, options) for check in chosen]
    story = next((c for c in checks if c.id == STORY), None)
    observation = Observation(
        overall(checks),
        summary(checks),
        story.timeline if story else [],
        {**(story.details if story else {}), **_check_details(checks)},
    )
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
        checks=checks,
    )


def run_check(lesson: Lesson, check: Check, variant: Variant, options: Options) -> CheckResult:
    observation = _observe(lesson, check, variant, options)
    return CheckResult(
        check.id, observation.verdict, observation.symptom, observation.timeline, observation.details
    )


def _declared_out(lesson: Lesson, check: Check, variant: Variant) -> bool:
    """A check (not the story) that drives only components the variant declares
    unavailable is not run, as a story probe is not driven (see `Lesson.probes`); nor is a
    check the variant declares unavailable by its id (the upstream adapter: `simulation`)."""
    if check.id == STORY:
        return False
    if variant.declared_unavailable((check.id,)):
        return True
    components = tuple(dict.fromkeys(name.partition(".")[0] for name in check.needs or lesson.needs))
    return bool(components) and len(variant.declared_unavailable(components)) == len(components)


def offers(variant: Variant, check: Check) -> bool:
    """Whether the variant runs `check`: one with a `configuration` runs only where the
    variant's module offers that configuration (`CONFIGURATIONS`), as an exploration runs
    only where it can (`deep.runs_on`); our forms model none of them."""
    return not check.configuration or check.configuration in getattr(variant.module, "CONFIGURATIONS", {})


def _module(variant: Variant, check: Check) -> Any:
    """The module a check's body drives: the variant's, or its configuration's."""
    return variant.module.CONFIGURATIONS[check.configuration] if check.configuration else variant.module


def _check_details(checks: list[CheckResult]) -> dict[str, Any]:
    """Each other check's details, under `checks` (the story's stay at the top level)."""
    found = {c.id: c.details for c in checks if c.id != STORY and c.details}
    return {"checks": found} if found else {}


def _observe(lesson: Lesson, check: Check, variant: Variant, options: Options) -> Observation:
    probes = lesson.probes if check.id == STORY else ()
    declared = variant.declared_unavailable(probes)
    if probes and len(declared) == len(probes):
        return Observation("unknown", "; ".join(declared.values()))
    needs = check.needs or lesson.needs
    reason = variant.unavailable(tuple(name for name in needs if name not in declared))
    if reason:
        return Observation("unknown", reason)
    if not runs_on(check.transports, options.transport):
        return Observation("unknown", f"no {options.transport} scenario for this check")
    if not offers(variant, check):
        return Observation("unknown", f"the variant offers no configuration {check.configuration!r}")
    unusable = _backend_unusable(lesson, options)
    if unusable:
        return Observation("unknown", unusable)
    try:
        story = check.id == STORY
        observation = _decided(lesson.id, check.body, variant, options, _module(variant, check))
        if story and options.repeat > 0 and lesson.stress is not None:
            observation = _with_stress(observation, lesson.stress(variant.module, options))
        return observation
    except SettleTimeout as exc:
        return Observation("unknown", f"hit its time bound: {exc}")
    except (Exception, SystemExit) as exc:  # a variant's bug must not end the whole run
        return Observation("unknown", f"scenario raised {_one_line(exc)}")


def _decided(
    lesson_id: str, body: Body, variant: Variant, options: Options, module: Any = None
) -> Observation:
    """A check's body (on `module`, the variant's unless a configuration's), or, for a
    variant with a `DECIDE` (the upstream adapter: its own wiring decides, `latent` and
    `--provoke`), that function around the body."""
    module = variant.module if module is None else module
    decide = getattr(variant.module, "DECIDE", None)
    if decide is None:
        return body(module, options)
    return decide(lesson_id, options, lambda opts: body(module, opts))


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
