"""Which judge catches each fix-hunk revert (`reverts.py`), and why the others are listed.

Kinds:

- `lesson`: the lesson's scenario gives `bug` (with `sockets`, under those socket options);
- `explore`: the named exploration gives `bug`;
- `structural`: the hunk defines a name the fix's other hunks use, so reverted alone the
  code cannot run (AttributeError, NameError); the hunks that use it are reverted on
  their own, and `LINKED` pairs reverts one that is a half of one change;
- `harmless`: reverting it changes no behaviour, for the reason given;
- `gap`: a real loss no judge sees yet, for the reason given (tests/test_reverts.py marks
  it a strict xfail, so the day a check catches it the test says to move it).

REVERTS.md, next to this file, is this table in prose.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Judged:
    kind: str  # lesson, explore, structural, harmless, gap
    lesson: bool = False  # the lesson (default options) gives bug
    explore: str | None = None  # this exploration gives bug
    sockets: str | None = None  # the lesson gives bug under these socket options
    reason: str = ""


_CP2 = (
    "it drops the generations this receiver used for its other CP ranks; with one CP rank, as in "
    "every lesson and exploration world, there is none: needs context parallel 2 (issue 12 checklist)"
)
_CONNECT = (
    "it only matters when connect itself raises (upstream: a ZMQError for a bad endpoint); the mock "
    "and loopback transports' connect never raises: needs a transport whose connect fails (checklist)"
)

EXPECTED: dict[str, Judged] = {
    "bootstrap_server: strong references": Judged(
        "structural", reason="creates `_background_tasks`, which `held until done` fills: AttributeError"
    ),
    "bootstrap_server: held until done": Judged("lesson", lesson=True),
    "dispatcher: the dispatcher owns its loops": Judged(
        "structural", reason="creates `background_tasks`, which `a strong reference until done` fills"
    ),
    "dispatcher: a strong reference until done": Judged("lesson", lesson=True),
    "manager: a cleared room stays cleared": Judged("lesson", lesson=True, explore="late-failed-after-clear"),
    "manager: snapshot": Judged("lesson", lesson=True, explore="every-affected-room-failed"),
    "receiver: generations used": Judged(
        "structural", reason="creates `_connection_pool_entries`, which every fill and invalidation uses"
    ),
    "receiver: drop only the generation this receiver used (identity, not": Judged(
        "structural", reason="defines `invalidate_cached_bootstrap_infos`, which five other hunks call"
    ),
    "receiver: one locked lookup": Judged(
        "structural", reason="binds `cached`, which `the object looked up under the lock` reads (NameError)"
    ),
    "receiver: on fetch failure": Judged("lesson", lesson=True),  # by its checklist (context parallel 2)
    "receiver: record the generation": Judged(
        "harmless",
        reason="the generation is recorded before registration, when it is not in the pool yet, so an "
        "invalidation on a registration failure finds nothing of it to remove by identity; the fill "
        "records it again once installed (upstream has the same line)",
    ),
    "receiver: on registration failure": Judged("lesson", lesson=True),  # by its checklist
    "receiver: adopt a concurrent winner": Judged("explore", explore="concurrent-fill-then-restart"),
    "receiver: the object looked up under the lock": Judged("lesson", lesson=True, explore="hit-vs-eviction"),
    "receiver: connect inside the try": Judged("lesson", lesson=True),  # by its checklist
    "receiver: connect inside the try #2": Judged("lesson", lesson=True),  # by its checklist
    "receiver: on send failure": Judged("explore", explore="stale-generation-replaced", sockets="fail-fast"),
    "receiver: on waiting timeout": Judged("lesson", lesson=True),
    "receiver: one locked lookup + the object looked up under the lock": Judged(
        "lesson", lesson=True, explore="hit-vs-eviction"
    ),
}
