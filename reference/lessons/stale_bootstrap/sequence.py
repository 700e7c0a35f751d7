"""The interleaving lesson `stale-bootstrap` forces, as data for a sequence diagram
(buggy when `fixed` is False); `reference.teaching.plots.sequence_picture` draws it."""

from __future__ import annotations

from reference.teaching.sequences import Sequence, Step

_STALE_ACTORS = (
    "decode receivers",
    "connection_pool",
    "bootstrap server",
    "prefill, old ports",
    "prefill, new ports",
)


def interleaving(fixed: bool) -> Sequence:
    R, P, B, OLD, NEW = _STALE_ACTORS
    ending = (
        (
            Step(R, P, "invalidate: delete the key only if pool[key] is G1", "fix"),
            Step(R, B, "next request: a miss: GET /route -> new ports (G2)", "fix"),
            Step(R, NEW, "REGISTER, METADATA -> Success; and so on", "fix"),
        )
        if fixed
        else (
            Step(R, R, "every later request: the same key, the same G1, no GET /route", "bug"),
            Step(R, R, "fails forever (until the decode itself restarts)", "error"),
        )
    )
    return Sequence(
        f"stale-bootstrap, {'fixed' if fixed else 'buggy'} form",
        _STALE_ACTORS,
        (
            Step(R, B, "first request: GET /route per rank -> ports 41000, 41001"),
            Step(R, P, "cache key -> G1 (the old ports)"),
            Step(R, OLD, "REGISTER, METADATA -> Success"),
            Step(OLD, OLD, "process restarts (same bootstrap address)", "note"),
            Step(NEW, B, "PUT /route: new ports; /health still 200"),
            Step(R, P, "next request: key hit -> G1"),
            # the same step in both forms, so the same (plain) colour: upstream's sockets (ZMQ_IMMEDIATE=0)
            # queue the send to the dead port, and the request ends on the waiting timeout
            Step(
                R,
                OLD,
                "METADATA to the old port: queued silently; Failed at the 300 s waiting timeout",
                "plain",
            ),
            *ending,
        ),
    )
