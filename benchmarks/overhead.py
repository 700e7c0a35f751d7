"""Run the micro benchmarks in one pytest-benchmark session and pair buggy with fixed.

Both variants of a case run back to back in the same process, so they see the same
machine load; only their ratio is meant to be compared across machines. A round is a
batch of operations, so ns/op is the round's median time divided by the batch size
(the median, not the mean, because the machine is shared and noisy).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.modes import Mode

ROOT = Path(__file__).resolve().parent.parent
LABELS = ("case", "variant", "ops_per_round")


def run_pytest(mode: Mode, raw_json: Path, timeout: float) -> subprocess.CompletedProcess:
    """One pytest-benchmark session over `benchmarks/`, raw results into `raw_json`."""
    raw_json.parent.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, "-m", "pytest", "benchmarks", "-q", "-p", "no:randomly",
        f"--bench-mode={mode.name}", f"--benchmark-json={raw_json}", "--benchmark-disable-gc",
        "--benchmark-columns=min,median,iqr,rounds", "--benchmark-sort=name",
        "-o", f"timeout={int(timeout)}",
    ]  # fmt: skip
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def _side(bench: dict[str, Any]) -> dict[str, Any]:
    stats, extra = bench["stats"], bench["extra_info"]
    ops = extra["ops_per_round"]
    side = {
        "ns_per_op": stats["median"] * 1e9 / ops,
        "min_ns_per_op": stats["min"] * 1e9 / ops,
        "iqr_ns_per_op": stats["iqr"] * 1e9 / ops,
        "rounds": stats["rounds"],
        "ops_per_round": ops,
    }
    side.update({key: value for key, value in extra.items() if key not in LABELS})
    if "threads" in extra:
        side["ops_per_s"] = 1e9 / side["ns_per_op"]
    return side


def pair(
    case: str,
    buggy: dict[str, Any],
    fixed: dict[str, Any],
    unit: str = "ns/op",
    hardened: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """fixed/buggy as `ratio`; with a hardened side also `hardened_ratio` (hardened/buggy)."""
    b, f = buggy["ns_per_op"], fixed["ns_per_op"]
    out = {
        "case": case,
        "unit": unit,
        "buggy": buggy,
        "fixed": fixed,
        "ratio": f / b if b > 0 else None,
        "added_ns": f - b,
    }
    if hardened is not None:
        h = hardened["ns_per_op"]
        out.update(hardened=hardened, hardened_ratio=h / b if b > 0 else None, hardened_added_ns=h - b)
    return out


def pairs_from_raw(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """Pair the buggy and fixed benchmark of each case, in the order they ran."""
    sides: dict[str, dict[str, dict[str, Any]]] = {}
    for bench in raw["benchmarks"]:
        extra = bench["extra_info"]
        sides.setdefault(extra["case"], {})[extra["variant"]] = _side(bench)
    pairs = []
    for case, by_variant in sorted(sides.items(), key=lambda item: _order(item[0])):
        if not {"buggy", "fixed"} <= set(by_variant):
            raise ValueError(f"case {case!r} lacks a variant: has {sorted(by_variant)}")
        hardened = by_variant.get("hardened")
        pairs.append(pair(case, by_variant["buggy"], by_variant["fixed"], hardened=hardened))
        if "lock_hold_ns_median" in by_variant["buggy"]:
            pairs.append(_lock_hold_pair(case, by_variant["buggy"], by_variant["fixed"], hardened))
    return pairs


ORDER = (
    "update_status",
    "_handle_node_failure",
    "task registration",
    "receiver cache hit",
    "cache hits under invalidation",
    "receiver set-up",
)


def _order(case: str) -> int:
    """Report cases grouped by component, whatever order pytest ran them in."""
    return next((i for i, prefix in enumerate(ORDER) if case.startswith(prefix)), len(ORDER))


def _lock_hold_pair(
    case: str, buggy: dict[str, Any], fixed: dict[str, Any], hardened: dict[str, Any] | None
) -> dict[str, Any]:
    """How long `connection_lock` was held per call: what other threads wait on."""

    def side(s: dict[str, Any]) -> dict[str, Any]:
        return {"ns_per_op": s["lock_hold_ns_median"], "rounds": s["rounds"]}

    held = side(hardened) if hardened is not None else None
    return pair(
        f"{case} (connection_lock held)", side(buggy), side(fixed), unit="ns held/call", hardened=held
    )


CACHE_HIT = "receiver cache hit (_setup_bootstrap_infos)"
SETUP = "receiver set-up on a miss (loopback)"


def setup_share(pairs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The fixed cache hit, and every added cost, as a share of one whole loopback set-up.

    Adds `added_share_of_setup` to each ns/op pair in place; None without a set-up.
    """
    by_case = {p["case"]: p for p in pairs}
    if CACHE_HIT not in by_case or SETUP not in by_case:
        return None
    setup_ns = by_case[SETUP]["fixed"]["ns_per_op"]
    for p in pairs:
        # Per-request operations only: a node failure happens per prefill, not per request.
        if p["unit"] == "ns/op" and p["case"] != SETUP and not p["case"].startswith("_handle_node_failure"):
            p["added_share_of_setup"] = p["added_ns"] / setup_ns
    hit = by_case[CACHE_HIT]
    return {
        "setup_ns": setup_ns,
        "buggy_setup_ns": by_case[SETUP]["buggy"]["ns_per_op"],
        "fixed_cache_hit_ns": hit["fixed"]["ns_per_op"],
        "buggy_cache_hit_ns": hit["buggy"]["ns_per_op"],
        "fixed_cache_hit_share": hit["fixed"]["ns_per_op"] / setup_ns,
        "hardened_cache_hit_ns": hit.get("hardened", {}).get("ns_per_op"),
        "hardened_cache_hit_ratio": hit.get("hardened_ratio"),
        "added_cache_hit_share": hit["added_ns"] / setup_ns,
    }


def write_json(path: Path, payload: dict[str, Any], compact: bool = False) -> None:
    """Indented for reading, or one line (`compact`) for per-request records."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(payload, separators=(",", ":")) if compact else json.dumps(payload, indent=1)
    path.write_text(text + "\n")
