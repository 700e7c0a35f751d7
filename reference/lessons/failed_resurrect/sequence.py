"""The interleaving lesson `failed-resurrect` forces, as data for a sequence diagram
(buggy when `fixed` is False); `reference.teaching.plots.sequence_picture` draws it."""

from __future__ import annotations

from reference.teaching.sequences import Sequence, Step

_RESURRECT_ACTORS = ("decode scheduler", "abort() (late)", "update_status", "request_status")


def interleaving(fixed: bool) -> Sequence:
    S, A, U, T = _RESURRECT_ACTORS
    last = (
        Step(U, U, "room absent + Failed: return, nothing stored", "fix")
        if fixed
        else Step(U, T, "room absent: store it -> {7: Failed}", "bug")
    )
    ending = (
        Step(T, T, "{} : room 7 stays cleared", "note")
        if fixed
        else Step(T, T, "{7: Failed} forever: nobody clears 7 again (leak)", "error")
    )
    return Sequence(
        f"failed-resurrect, {'fixed' if fixed else 'buggy'} form",
        _RESURRECT_ACTORS,
        (
            Step(S, U, "update_status(7, Bootstrapping), then (7, WaitingForInput)"),
            Step(U, T, "{7: WaitingForInput}"),
            Step(S, T, "request done: clear(7) pops the room -> {}"),
            Step(A, U, "record_failure(7); update_status(7, Failed)"),
            last,
            ending,
        ),
    )
