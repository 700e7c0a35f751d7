"""From per-request records around a prefill restart to the recovery numbers.

Times are seconds relative to the restart instant (negative: before it). A request is
`(receiver, key, sent_s, done_s, outcome, ports)` with outcome `success` or `failed` and
the prefill rank ports it sent to (none when its route fetch failed). For one run:

- `registered_after_s`: when the new prefill was registered with the bootstrap server;
- `first_success_after_restart_s`: when the first request sent after the restart
  succeeded (its completion time), or the string "never" within the horizon;
- `first_success_after_registered_s`: the same, counted from the registration;
- `failed_after_restart`: requests sent after the restart that failed, of which
  `failed_while_down` found no prefill to ask (route fetch failed: unavoidable until
  the new process registers, in any form) and `stale_failures_per_key` used the old
  process's ports, from the cache: what the stale cache costs, per cache key (the
  target's "at most one failed request per cache key"), `stale_failures` their total;
- `failed_after_registered`: requests sent after the new prefill registered that failed;
- `failed_per_key_after_registered`: failures of requests sent after the new prefill
  registered, per key (should be none once a form has recovered);
- `recovered`: some request sent after the restart succeeded within the horizon.

A variant that never recovers gets "never", not a number: a horizon is not a time.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

NEVER = "never"


@dataclass(frozen=True)
class Request:
    receiver: int
    key: str
    sent_s: float
    done_s: float
    outcome: str  # "success" | "failed"
    ports: tuple[int, ...] = ()
    detail: str = ""

    @property
    def latency_s(self) -> float:
        return self.done_s - self.sent_s

    def to_json(self) -> dict[str, Any]:
        """Times to the microsecond, no empty detail: thousands of these go into the results."""
        out = {**asdict(self), "latency_s": self.latency_s}
        for key in ("sent_s", "done_s", "latency_s"):
            out[key] = round(out[key], 6)
        if not out["detail"]:
            del out["detail"]
        return out


def _per_key(requests: list[Request]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in requests:
        counts[r.key] = counts.get(r.key, 0) + 1
    return counts


def summarise_run(
    repetition: int, requests: list[Request], registered_s: float | None, old_ports: list[int] | None = None
) -> dict[str, Any]:
    after = [r for r in requests if r.sent_s >= 0]
    failed = [r for r in after if r.outcome == "failed"]
    successes = sorted(r.done_s for r in after if r.outcome == "success")
    first = successes[0] if successes else None
    stale = _per_key([r for r in failed if set(r.ports) & set(old_ports or ())])
    late = [r for r in failed if registered_s is not None and r.sent_s >= registered_s]
    return {
        "repetition": repetition,
        "registered_after_s": registered_s,
        "recovered": first is not None,
        "first_success_after_restart_s": first if first is not None else NEVER,
        "first_success_after_registered_s": (
            first - registered_s if first is not None and registered_s is not None else NEVER
        ),
        "failed_after_restart": len(failed),
        "failed_while_down": sum(not r.ports for r in failed),
        "stale_failures_per_key": stale,
        "max_failed_per_key": max(stale.values(), default=0),
        "stale_failures": sum(stale.values()),
        "failed_after_registered": len(late),
        "failed_per_key_after_registered": _per_key(late),
        "succeeded_after_restart": len(successes),
        "sent_before_restart": len(requests) - len(after),
        "failed_before_restart": sum(r.outcome == "failed" for r in requests if r.sent_s < 0),
        "requests": [r.to_json() for r in requests],
    }


def sweep_label(sweep: dict[str, Any]) -> str:
    """The socket options a sweep ran on (and its transport, when not loopback); results from
    before the `sockets` key name only a send timeout."""
    sockets = str(sweep.get("sockets") or f"fail-fast (IMMEDIATE=1, SNDTIMEO {sweep['send_timeout_s']:g} s)")
    transport = sweep.get("transport", "loopback")
    return sockets if transport == "loopback" else f"{transport}, {sockets}"


def spread(values: list[float | str | None]) -> dict[str, Any] | str:
    """Median, min and max over runs; "never" if any run never got there."""
    if any(v == NEVER or v is None for v in values):
        seen = sum(1 for v in values if v != NEVER and v is not None)
        return NEVER if not seen else f"{NEVER} in {len(values) - seen} of {len(values)} runs"
    numbers = [float(v) for v in values]  # type: ignore[arg-type]
    return {"median": statistics.median(numbers), "min": min(numbers), "max": max(numbers), "n": len(numbers)}


def summarise_variant(runs: list[dict[str, Any]]) -> dict[str, Any]:
    def column(name: str) -> list:
        return [run[name] for run in runs]

    return {
        "runs_recovered": f"{sum(column('recovered'))} of {len(runs)}",
        "registered_after_s": spread(column("registered_after_s")),
        "first_success_after_restart_s": spread(column("first_success_after_restart_s")),
        "first_success_after_registered_s": spread(column("first_success_after_registered_s")),
        "failed_after_restart": spread(column("failed_after_restart")),
        "failed_while_down": spread(column("failed_while_down")),
        "stale_failures": spread(column("stale_failures")),
        "failed_after_registered": spread(column("failed_after_registered")),
        "max_failed_per_key": max(column("max_failed_per_key"), default=0),
    }
