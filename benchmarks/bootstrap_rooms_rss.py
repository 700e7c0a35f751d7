"""RSS of the bootstrap server's `room_to_dp_rank` under a registration flood.

    python -m benchmarks.bootstrap_rooms_rss [--rooms 100000] [--json]

Each configuration runs in a fresh interpreter: import the table, measure RSS, register
`--rooms` distinct rooms through `BootstrapTable.register_dp_rank` (the route's own
code, no transport), `gc.collect()`, measure again. Configurations: unbounded (upstream:
entries leave only when the 120 s cleanup expires them) and the default bound
(`MAX_ROOMS`, oldest evicted first), each with `--rooms` and with ten times as many.
The numbers in `reference/common/README.md` ("Bounds") come from this script.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys

from reference.common.bootstrap_table import MAX_ROOMS, BootstrapTable

UNBOUNDED = 1 << 62


def rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def measure(rooms: int, max_rooms: int) -> dict[str, int]:
    """In this process: RSS before and after registering `rooms` rooms."""
    table = BootstrapTable(max_rooms=max_rooms)
    gc.collect()
    before = rss_bytes()
    for room in range(rooms):
        table.register_dp_rank({"bootstrap_room": (room * 0x9E3779B97F4A7C15) % (1 << 63), "dp_rank": 1})
    gc.collect()
    after = rss_bytes()
    return {"rooms": rooms, "max_rooms": max_rooms, "entries": len(table.room_to_dp_rank),
            "rss_before": before, "rss_after": after}  # fmt: skip


def in_child(rooms: int, max_rooms: int) -> dict[str, int]:
    code = f"import json, benchmarks.bootstrap_rooms_rss as b; print(json.dumps(b.measure({rooms}, {max_rooms})))"  # noqa: E501
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bootstrap_rooms_rss")
    parser.add_argument("--rooms", type=int, default=100_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = [in_child(n, bound) for bound in (UNBOUNDED, MAX_ROOMS) for n in (args.rooms, 10 * args.rooms)]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'bound':>10} {'rooms':>9} {'entries':>8} {'RSS before':>11} {'RSS after':>10} {'growth':>9}")
    for row in rows:
        bound = "none" if row["max_rooms"] == UNBOUNDED else str(row["max_rooms"])
        growth = (row["rss_after"] - row["rss_before"]) / 2**20
        print(
            f"{bound:>10} {row['rooms']:>9} {row['entries']:>8} {row['rss_before'] / 2**20:>9.1f} MiB"
            f" {row['rss_after'] / 2**20:>7.1f} MiB {growth:>+7.1f} MiB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
