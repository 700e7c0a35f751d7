"""Lesson `task-refs` (PR #33048; sglang 0.5.19).

asyncio's event loop keeps only weak references to tasks. A task made with a bare
`create_task` whose await is reachable only through the task itself is garbage, and
`gc.collect()` destroys it mid-execution ("Task was destroyed but it is pending!").
Before the fix, upstream's DP dispatcher started its result listener, worker watchdog
and stale-mapping sweep that way, and the bootstrap server its cleanup of expired
`room_to_dp_rank` entries. The fix keeps each task in a set with
`add_done_callback(set.discard)`.

The verdict comes from components, not a toy coroutine: each probe drives one
component in a configuration where one of its loops is collectable, runs
`gc.collect()`, and makes the loop's job observable: a dead worker rank unnoticed
(`dispatcher_probe.py`), stale room mappings that grow (`bootstrap_probe.py`).
`notes()` adds the honest half: a live table of which awaits are collectable at all
(`collectable.py`), and what the fix leaves open (`swallowed.py`).

A variant that declares one component unavailable (the upstream adapter: the DP
dispatcher) has that probe reported as "not driven (reason)" in the symptom, and the
verdict comes from the probes that ran (`Lesson.probes`).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import reference.fixed
from reference.harness.lesson import Lesson, Options
from reference.harness.result import Observation
from reference.lessons.task_refs import bootstrap_probe, collectable, dispatcher_probe, swallowed
from reference.lessons.task_refs.checks import CHECKS
from reference.lessons.task_refs.finding import Finding
from reference.variants import declared_unavailable

Probe = Callable[[ModuleType, str], Finding]

# One probe per component whose background task upstream created bare: (what the
# symptom calls it, the variant's class it drives, the probe).
PROBES: tuple[tuple[str, str, Probe], ...] = (
    ("DP dispatcher", "DPDispatcher", dispatcher_probe.observe),
    ("bootstrap server", "BootstrapServer", bootstrap_probe.observe),
)


def observe(variant: ModuleType, options: Options) -> Observation:
    declared = declared_unavailable(variant, tuple(component for _, component, _ in PROBES))
    not_driven = [f"{label}: not driven ({declared[c]})" for label, c, _ in PROBES if c in declared]
    findings = [probe(variant, options.transport) for _, c, probe in PROBES if c not in declared]
    details = {f.component: f.details for f in findings}
    timeline = [event for f in findings for event in f.timeline]
    problems = [f"{f.component}: {'; '.join(f.problems)}" for f in findings if f.problems]
    if problems:
        return Observation("bug", " | ".join(problems + not_driven), timeline, details)
    fine = [f"{f.component}: {f.fine}" for f in findings]
    return Observation("ok", " | ".join(fine + not_driven), timeline, details)


def notes() -> str:
    lost = swallowed.demonstrate(reference.fixed)
    return "\n".join(
        [
            collectable.table(),
            "  Upstream's loops park in a timer, the result socket or sentinel readers, so its bare tasks",
            "  were latent; the fix still matters because what a loop awaits is an accident of today's code.",
            "",
            "What the fix leaves open (fixed form, a background loop that raises):",
            f"  {lost.symptom}",
        ]
    )


LESSON = Lesson(
    id="task-refs",
    title="Bare create_task: the loop holds background tasks only weakly",
    upstream="PR #33048 (0.5.19)",
    needs=("DPDispatcher", "BootstrapServer"),
    probes=("DPDispatcher", "BootstrapServer"),
    body=observe,
    transports=("mock", "loopback"),
    notes=notes,
    checks=CHECKS,
)
