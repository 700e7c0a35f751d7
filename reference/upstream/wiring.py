"""Upstream's own wiring decides: `latent` when a defect is there but nothing triggers it.

A scenario needs a trigger to show a defect: lesson `task-refs` a background task whose
await is reachable only through the task (the scenario offers the bootstrap server a
tick source that holds its waiters weakly), lesson `live-set-race` a cleanup that
discards from the live room set while the heartbeat iterates it (upstream mori's
`_cleanup_room_tracking`). Whether upstream's own code supplies that trigger in a
release is read from that release's code, and named by file and line:

- `task-refs`: the cleanup task is created bare, but it awaits `asyncio.sleep`, whose
  timer keeps it reachable from the loop: nothing collects it;
- `live-set-race` and `stale-tracker`: mori's cleanup meets the heartbeat's failure
  handler only if mori starts the heartbeat (first in 0.5.19, the release of the
  #36351 fix); mooncake and nixl, which start it, have no such cleanup. From 0.5.20
  mori's cleanup is gone: `stale-tracker` then runs on the cleanup that release has
  (`CommonKVReceiver.clear`), with no trigger.

`decide` runs the lesson with the trigger (the adapters add it while `Triggers.on`).
No defect: that verdict stands. A defect that upstream's wiring triggers: `bug`. A
defect it does not trigger: `latent`, after a second run on upstream's own wiring
where the lesson can run without the trigger (`task-refs`: upstream's real sleep)
confirms that nothing happens there; `--provoke` reports it as `bug` with the trigger
named in the symptom. A version without the racing partner at all gets the adapter's
stand-in for it (`manager._discard_without_the_lock`), named as the trigger.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from reference.harness.options import Options
from reference.harness.result import Observation
from reference.upstream.errors import UpstreamError
from reference.upstream.loader import UpstreamLoad

Run = Callable[[Options], Observation]


@dataclass(frozen=True)
class Wiring:
    triggers: bool  # upstream's own code triggers the defect in this release
    why: str  # what upstream's wiring does, with the deciding file:line
    trigger: str  # what the adapter adds (always, to see the defect; named under --provoke)
    confirm: bool = False  # the lesson also runs without the trigger, on upstream's wiring


class Triggers:
    """Which lessons' triggers the adapters add right now (see `decide`)."""

    def __init__(self) -> None:
        self._active: set[str] = set()

    def active(self, lesson_id: str) -> bool:
        return lesson_id in self._active

    @contextmanager
    def on(self, lesson_id: str) -> Iterator[None]:
        self._active.add(lesson_id)
        try:
            yield
        finally:
            self._active.discard(lesson_id)


def decide(load: UpstreamLoad, triggers: Triggers, lesson_id: str, options: Options, run: Run) -> Observation:
    rule = RULES.get(lesson_id)
    try:
        wiring = rule(load) if rule is not None else None
    except UpstreamError:
        wiring = None  # the component is not there: the lesson's own checks say so
    if wiring is None:
        return run(options)
    with triggers.on(lesson_id):
        triggered = run(options)
    if triggered.verdict != "bug" or wiring.triggers:
        return triggered
    details = {**triggered.details, "wiring": wiring.why, "trigger": wiring.trigger}
    if options.provoke:
        symptom = f"(provoked: {wiring.trigger}) {triggered.symptom}"
        return Observation("bug", symptom, triggered.timeline, {**details, "provoked": True})
    if wiring.confirm:
        own = run(options)
        if own.verdict == "bug":
            return own  # upstream's wiring triggers it after all
        details["own_wiring"] = own.symptom
    symptom = f"{wiring.why}; with {wiring.trigger} (--provoke): {triggered.symptom}"
    return Observation("latent", symptom, triggered.timeline, details)


def _task_refs(load: UpstreamLoad) -> Wiring:
    server = load.get("CommonKVBootstrapServer")
    cleanup = server._cleanup_expired_entries
    where = _line(load, server, r"create_task\(\s*self\._cleanup_expired_entries")
    sleeps = "sleep" in cleanup.__code__.co_names
    return Wiring(
        triggers=not sleeps,
        why=(
            f"the bare create_task is there ({where}), but the task awaits asyncio.sleep, "
            "whose timer keeps it alive"
        ),
        trigger="a tick source that holds its waiters weakly, instead of the cleanup's asyncio.sleep",
        confirm=True,
    )


def _live_set_race(load: UpstreamLoad) -> Wiring:
    mori, cleanup = _mori_cleanup(load)
    if mori is None or cleanup is None:
        return Wiring(
            triggers=False,
            why=f"no racing cleanup in {load.source.label} (mori's _cleanup_room_tracking is gone)",
            trigger="a tracker discard without the lock, as mori's cleanup did (adapter code)",
        )
    return _with_mori_heartbeat(load, mori, cleanup, "the racing cleanup")


def _stale_tracker(load: UpstreamLoad) -> Wiring | None:
    """None from 0.5.20, where mori's cleanup is gone: the lesson then runs on the
    cleanup that release has (`CommonKVReceiver.clear`, manager.py), no trigger."""
    mori, cleanup = _mori_cleanup(load)
    if mori is None or cleanup is None:
        return None
    return _with_mori_heartbeat(load, mori, cleanup, "the stale cleanup")


def _mori_cleanup(load: UpstreamLoad) -> tuple[type | None, object]:
    mori = load.get("MoriKVManager") if load.has("MoriKVManager") else None
    return mori, vars(mori).get("_cleanup_room_tracking") if mori is not None else None


def _with_mori_heartbeat(load: UpstreamLoad, mori: type, cleanup: object, what: str) -> Wiring:
    """Mori's cleanup meets the failure handler only where mori starts the heartbeat."""
    starts = "_start_heartbeat_checker_thread" in mori.__init__.__code__.co_names  # type: ignore[misc]
    cleanup_at = _at(load, cleanup)
    if starts:
        where = _line(load, mori, r"self\._start_heartbeat_checker_thread\(")
        why = f"mori's cleanup ({cleanup_at}) runs while mori's heartbeat does ({where})"
    else:
        why = (
            f"{what} (mori's _cleanup_room_tracking, {cleanup_at}) and the heartbeat do not run "
            f"together in this release: mori never starts the heartbeat ({_at(load, mori.__init__)}); "  # type: ignore[misc]
            "mooncake and nixl, which do, have no racing cleanup"
        )
    return Wiring(triggers=starts, why=why, trigger="mori's cleanup with the heartbeat")


RULES: dict[str, Callable[[UpstreamLoad], Wiring | None]] = {
    "task-refs": _task_refs,
    "live-set-race": _live_set_race,
    "stale-tracker": _stale_tracker,
}


def _at(load: UpstreamLoad, function: object) -> str:
    code = function.__code__  # type: ignore[attr-defined]
    return f"{_relative(load, code.co_filename)}:{code.co_firstlineno}"


def _line(load: UpstreamLoad, cls: type, pattern: str) -> str:
    """file:line of the first line of `cls`'s file matching `pattern` (the class's file)."""
    module_file = vars(cls)["__init__"].__code__.co_filename if "__init__" in vars(cls) else ""
    rel = _relative(load, module_file)
    text = load.source.read(rel.removeprefix("sglang/")) or ""
    match = re.search(pattern, text)
    return f"{rel}:{text.count(chr(10), 0, match.start()) + 1}" if match else rel


def _relative(load: UpstreamLoad, filename: str) -> str:
    return filename.removeprefix(f"<{load.source.label}>/")
