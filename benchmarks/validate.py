"""Check that a run's results are well formed: what the CI smoke run asserts.

It checks shape, not speed: every expected file and case is there, every number is
finite and positive where it must be, every buggy case has its fixed twin, targets are
decided or say why not, and the plots are real PNG files. It returns the problems as
one-line strings; an empty list means well formed.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from benchmarks.modes import Mode

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
TARGET_IDS = ("cache-hit-share", "recovery", "detection", "hardened-recovery", "hardened-cache-hit")
SWITCHES = ("", ", switch 10us")  # contention at the default and at a 10 us GIL switch interval


def _positive(value: Any) -> bool:
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    )


def expected_cases(mode: Mode) -> list[str]:
    """The cases a run must have."""
    return [
        "update_status/existing-room",
        "update_status/new-room",
        "update_status/late-failed-after-clear",
        *(f"_handle_node_failure/{n}-rooms" for n in mode.room_counts),
        "task registration/spawn+finish",
        "task registration/DPDispatcher.start() (3 loops)",
        "receiver cache hit (_setup_bootstrap_infos)",
        *(f"cache hits under invalidation/{n}-threads{s}" for n in mode.thread_counts for s in SWITCHES),
        "receiver set-up on a miss (loopback)",
    ]


def check_overhead(data: dict[str, Any], mode: Mode) -> list[str]:
    problems = []
    cases = {p.get("case"): p for p in data.get("pairs", [])}
    problems += [f"overhead: case {c!r} missing" for c in expected_cases(mode) if c not in cases]
    if not _positive((data.get("setup_share") or {}).get("fixed_cache_hit_share")):
        problems.append("overhead: no cache-hit share of a loopback set-up")
    for case, p in cases.items():
        for side in ("buggy", "fixed"):
            s = p.get(side, {})
            if not _positive(s.get("ns_per_op")) or not isinstance(s.get("rounds"), int) or s["rounds"] < 1:
                problems.append(f"overhead: {case} {side} has no positive ns_per_op or rounds")
        if not _positive(p.get("ratio")):
            problems.append(f"overhead: {case} ratio {p.get('ratio')!r} is not a positive number")
    return problems


def check_detection(data: dict[str, Any], mode: Mode) -> list[str]:
    configs = data.get("configs", [])
    want = len(mode.detection_intervals) * len(mode.detection_failures) * 2
    problems = [] if len(configs) == want else [f"detection: {len(configs)} configs, expected {want}"]
    for c in configs:
        times = c.get("detection_s", [])
        if len(times) != mode.detection_repeats:
            problems.append(f"detection: {len(times)} repetitions, expected {mode.detection_repeats}")
        if any(t is not None and not _positive(t) for t in times) or not _positive(c.get("bound_s")):
            problems.append(
                f"detection: non-positive time or bound in {c.get('variant')} {c.get('interval_s')}"
            )
    return problems


def check_recovery(data: dict[str, Any], mode: Mode) -> list[str]:
    sweeps = data.get("sweeps", [])
    transports = data.get("config", {}).get("transports", ["loopback"])
    want = len(mode.recovery_sockets) * len(transports)
    problems = [] if len(sweeps) == want else [f"recovery: {len(sweeps)} sweeps, expected {want}"]
    for sweep in sweeps:
        for name in ("buggy", "fixed", "hardened"):
            runs = sweep.get("variants", {}).get(name, {}).get("runs", [])
            if len(runs) != mode.recovery_repeats:
                problems.append(f"recovery: {name} has {len(runs)} runs, expected {mode.recovery_repeats}")
            for run in runs:
                if not run.get("requests"):
                    problems.append(f"recovery: {name} run {run.get('repetition')} recorded no requests")
                if not run.get("recovered") and run.get("first_success_after_restart_s") != "never":
                    problems.append(f"recovery: {name} did not recover but reports a first-success time")
                if not _positive(run.get("registered_after_s")):
                    problems.append(f"recovery: {name} run {run.get('repetition')}: no registration time")
    return problems


def check_summary(data: dict[str, Any]) -> list[str]:
    targets = {t.get("id"): t for t in data.get("targets", [])}
    problems = [f"summary: target {t!r} missing" for t in TARGET_IDS if t not in targets]
    problems += [
        f"summary: target {i!r} met={t.get('met')!r}"
        for i, t in targets.items()
        if t.get("met") not in (True, False, None)
    ]
    if "load" not in data.get("machine", {}):
        problems.append("summary: the machine's load is not described")
    return problems


def check_dir(out: Path, mode: Mode, expect: tuple[str, ...]) -> list[str]:
    """Check every result file of a run in `out`; `expect` names the parts that ran."""
    problems = []
    for part in expect:
        path = out / f"{part}.json"
        if not path.is_file():
            problems.append(f"{path.name} missing")
            continue
        data = json.loads(path.read_text())
        if part == "overhead":
            problems += check_overhead(data, mode)
        elif part == "detection":
            problems += check_detection(data, mode)
        else:
            problems += check_recovery(data, mode)
    summary = out / "summary.json"
    problems += (
        check_summary(json.loads(summary.read_text())) if summary.is_file() else ["summary.json missing"]
    )
    for png in (f"{part}.png" for part in expect):
        path = out / png
        if not path.is_file() or path.read_bytes()[:8] != PNG_MAGIC:
            problems.append(f"{png} missing or not a PNG")
    return problems
