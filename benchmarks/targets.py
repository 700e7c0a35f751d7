"""The issue's targets, checked against the results of a run (never in timed unit tests).

Each check returns `{"id", "target", "met", "measured"}`; `met` is True, False, or
None when the run did not measure what the target needs (then `measured` says why).
"""

from __future__ import annotations

from typing import Any

from benchmarks.recovery_metrics import sweep_label

CACHE_HIT_SHARE_LIMIT = 0.01  # of one whole loopback receiver set-up
HARDENED_CACHE_HIT_RATIO = 1.1  # hardened cache hit against buggy's
HARDENED_FIRST_SUCCESS_S = 0.010  # after the new prefill is registered
FIRST_SUCCESS_LIMIT_S = 0.050  # after the new prefill is registered
FAILED_PER_KEY_LIMIT = 1


def _not_measured(target_id: str, target: str, why: str) -> dict[str, Any]:
    return {"id": target_id, "target": target, "met": None, "measured": f"not measured: {why}"}


def cache_hit_share(overhead: dict[str, Any]) -> dict[str, Any]:
    target = "fixed cache-hit path < 1% of one whole loopback receiver set-up"
    share = overhead.get("setup_share")
    if not share:
        return _not_measured("cache-hit-share", target, "no receiver set-up in this run")
    fraction = share["fixed_cache_hit_share"]
    return {
        "id": "cache-hit-share",
        "target": target,
        "met": fraction < CACHE_HIT_SHARE_LIMIT,
        "measured": (
            f"fixed cache hit {share['fixed_cache_hit_ns']:.0f} ns = {fraction:.4%} of a "
            f"{share['setup_ns'] / 1e6:.2f} ms set-up"
        ),
    }


def _recovery_problems(variants: dict[str, Any]) -> list[str]:
    problems = []
    for run in variants["fixed"]["runs"]:
        rep = run["repetition"]
        if not run["recovered"]:
            problems.append(f"fixed run {rep} never recovered")
            continue
        if run["max_failed_per_key"] > FAILED_PER_KEY_LIMIT:
            problems.append(f"fixed run {rep}: {run['max_failed_per_key']} stale failures for one key")
        after = run["first_success_after_registered_s"]
        if not isinstance(after, int | float):
            problems.append(f"fixed run {rep}: registration never seen")
        elif after > FIRST_SUCCESS_LIMIT_S:
            problems.append(f"fixed run {rep}: first success {after * 1e3:.0f} ms after registration")
    recovered = [run["repetition"] for run in variants["buggy"]["runs"] if run["recovered"]]
    if recovered:
        problems.append(f"buggy recovered in runs {recovered}")
    return problems


def ms(value: Any) -> str:
    """A spread of seconds as milliseconds, or the string it is ("never")."""
    if isinstance(value, dict):
        low, mid, high = (value[k] * 1e3 for k in ("min", "median", "max"))
        return f"median {mid:.0f} ms (min {low:.0f}, max {high:.0f})"
    return str(value)


def _per_sweep(per_sweep: list[dict[str, Any]]) -> str:
    """Each sweep's verdict first, so it is not read as a verdict on the last clause."""
    return "; ".join(f"[{'met' if s['met'] else 'MISSED'}] {s['measured']}" for s in per_sweep)


def recovery(result: dict[str, Any] | None) -> dict[str, Any]:
    target = (
        "fixed: <= 1 failed request per cache key and first success <= 50 ms after the new "
        "prefill registered, in every run; buggy: never recovers"
    )
    if not result:
        return _not_measured("recovery", target, "no recovery benchmark in this run")
    per_sweep = []
    for sweep in result["sweeps"]:
        problems = _recovery_problems(sweep["variants"])
        fixed = sweep["variants"]["fixed"]["summary"]
        buggy = sweep["variants"]["buggy"]["summary"]
        measured = (
            f"{sweep_label(sweep)}: fixed first success "
            f"{ms(fixed['first_success_after_registered_s'])} after registration, max "
            f"{fixed['max_failed_per_key']} stale failure(s) per key; buggy first success "
            f"{ms(buggy['first_success_after_restart_s'])}"
        )
        per_sweep.append({"sockets": sweep_label(sweep), "met": not problems,
                          "measured": measured, "problems": problems})  # fmt: skip
    return {
        "id": "recovery",
        "target": target,
        "met": all(s["met"] for s in per_sweep),
        "measured": _per_sweep(per_sweep),
        "per_sweep": per_sweep,
    }


def hardened_recovery(result: dict[str, Any] | None) -> dict[str, Any]:
    target = (
        "hardened: 0 stale failures and first success <= 10 ms after the new prefill registered, "
        "in every run, on every socket setting"
    )
    if not result or not all("hardened" in s["variants"] for s in result["sweeps"]):
        return _not_measured("hardened-recovery", target, "no hardened recovery runs in this run")
    per_sweep = []
    for sweep in result["sweeps"]:
        problems = []
        for run in sweep["variants"]["hardened"]["runs"]:
            after = run["first_success_after_registered_s"]
            if run.get("stale_failures"):
                problems.append(f"run {run['repetition']}: {run['stale_failures']} stale failures")
            if not isinstance(after, int | float) or after > HARDENED_FIRST_SUCCESS_S:
                shown = f"{after * 1e3:.1f} ms" if isinstance(after, int | float) else after
                problems.append(f"run {run['repetition']}: first success {shown} after registration")
        summary = sweep["variants"]["hardened"]["summary"]
        measured = (
            f"{sweep_label(sweep)}: hardened stale failures max {summary['max_failed_per_key']} per key, "
            f"first success {ms(summary['first_success_after_registered_s'])} after registration"
        )
        per_sweep.append({"sockets": sweep_label(sweep), "met": not problems, "measured": measured,
                          "problems": problems})  # fmt: skip
    return {
        "id": "hardened-recovery",
        "target": target,
        "met": all(s["met"] for s in per_sweep),
        "measured": _per_sweep(per_sweep),
        "per_sweep": per_sweep,
    }


def hardened_cache_hit(overhead: dict[str, Any]) -> dict[str, Any]:
    target = f"hardened cache-hit path <= {HARDENED_CACHE_HIT_RATIO}x buggy's"
    share = overhead.get("setup_share") or {}
    ratio = share.get("hardened_cache_hit_ratio")
    if not isinstance(ratio, int | float):
        return _not_measured("hardened-cache-hit", target, "no hardened cache-hit case in this run")
    return {
        "id": "hardened-cache-hit",
        "target": target,
        "met": ratio <= HARDENED_CACHE_HIT_RATIO,
        "measured": (
            f"hardened {share['hardened_cache_hit_ns']:.0f} ns, buggy {share['buggy_cache_hit_ns']:.0f} ns: "
            f"{ratio:.2f}x"
        ),
    }


def detection(result: dict[str, Any] | None) -> dict[str, Any]:
    target = "failure detection <= interval x max failures + one interval"
    if not result:
        return _not_measured("detection", target, "no detection sweep in this run")
    misses = [
        f"{c['variant']} interval {c['interval_s']} s x {c['max_failures']}: max {c['max_s']} s "
        f"> {c['bound_s']:.3f} s"
        for c in result["configs"]
        if not c["within_bound"]
    ]
    worst = max(result["configs"], key=lambda c: (c["max_s"] or float("inf")) / c["bound_s"])
    measured = (
        f"{len(result['configs']) - len(misses)}/{len(result['configs'])} configs within bound; "
        f"worst max/bound {(worst['max_s'] or float('inf')) / worst['bound_s']:.2f}"
    )
    return {
        "id": "detection",
        "target": target,
        "met": not misses,
        "measured": measured + ("; " + "; ".join(misses) if misses else ""),
    }


def check_all(
    overhead: dict[str, Any], recovery_result: dict[str, Any] | None, detection_result: dict[str, Any] | None
) -> list[dict[str, Any]]:
    return [
        cache_hit_share(overhead),
        recovery(recovery_result),
        detection(detection_result),
        hardened_recovery(recovery_result),
        hardened_cache_hit(overhead),
    ]
