"""From per-request records around a prefill restart to the recovery numbers.

Times are seconds relative to the restart instant (negative: before it). A request is
`(receiver, key, sent_s, done_s, outcome)` with outcome `success` or `failed`. For one
run we derive:

- `registered_after_s`: when the new prefill was registered with the bootstrap server;
- `first_success_after_restart_s`: when the first request sent after the restart
  succeeded (its completion time), or the string "never" within the horizon;
- `first_success_after_registered_s`: the same, counted from the registration;
- `failed_after_restart`: requests sent after the restart that failed (the prefill
  is down until it registers again, so some failures there are unavoidable);
- `failed_per_key_after_registered`: failures of requests sent after the new prefill
  registered, per cache key: what the stale cache costs, the target's "per cache key";
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
    detail: str = ""

    @property
    def latency_s(self) -> float:
        return self.done_s - self.sent_s

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "latency_s": self.latency_s}


def summarise_run(repetition: int, requests: list[Request], registered_s: float | None) -> dict[str, Any]:
    after = [r for r in requests if r.sent_s >= 0]
    successes = sorted(r.done_s for r in after if r.outcome == "success")
    first = successes[0] if successes else None
    per_key: dict[str, int] = {}
    if registered_s is not None:
        for r in after:
            if r.outcome == "failed" and r.sent_s >= registered_s:
                per_key[r.key] = per_key.get(r.key, 0) + 1
    return {
        "repetition": repetition,
        "registered_after_s": registered_s,
        "recovered": first is not None,
        "first_success_after_restart_s": first if first is not None else NEVER,
        "first_success_after_registered_s": (
            first - registered_s if first is not None and registered_s is not None else NEVER
        ),
        "failed_after_restart": sum(r.outcome == "failed" for r in after),
        "succeeded_after_restart": len(successes),
        "failed_per_key_after_registered": per_key,
        "max_failed_per_key": max(per_key.values(), default=0),
        "sent_before_restart": len(requests) - len(after),
        "failed_before_restart": sum(r.outcome == "failed" for r in requests if r.sent_s < 0),
        "requests": [r.to_json() for r in requests],
    }


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
        "max_failed_per_key": max(column("max_failed_per_key"), default=0),
    }
