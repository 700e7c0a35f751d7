"""The committed benchmark results, loaded for notebook `05_benchmarks`.

`python -m benchmarks` writes `benchmarks/results/*.json` (and `--smoke` a small run in
`benchmarks/results/smoke/`). This module reads those files as they are committed,
prints their numbers as short tables, and draws them with the benchmarks' own plot
functions (`benchmarks/plots.py`, imported only when a picture is asked for), so the
notebook shows exactly what the committed PNGs show, redrawn from the data. It needs
the checkout: `benchmarks/` is not part of the installed package.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
Payload = dict[str, Any]


class PngPicture:
    """PNG bytes that Jupyter shows inline (`_repr_png_`)."""

    def __init__(self, png: bytes) -> None:
        self.png = png

    def _repr_png_(self) -> bytes:
        return self.png

    def __repr__(self) -> str:  # stable text (no address): committed outputs stay identical
        return f"PngPicture({len(self.png)} bytes)"


def load(name: str, folder: Path = RESULTS) -> Payload:
    path = folder / f"{name}.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: run `python -m benchmarks` (or --smoke) first")
    payload: Payload = json.loads(path.read_text())
    return payload


def _drawn(plot: Callable[[Payload, Path], None], payload: Payload) -> PngPicture:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "plot.png"
        plot(payload, path)
        return PngPicture(path.read_bytes())


def overhead_picture(overhead: Payload) -> PngPicture:
    from benchmarks import plots

    return _drawn(plots.overhead_ratios, overhead)


def recovery_picture(recovery: Payload) -> PngPicture:
    from benchmarks import plots

    return _drawn(plots.recovery_timeline, recovery)


def detection_picture(detection: Payload) -> PngPicture:
    from benchmarks import plots

    return _drawn(plots.detection_times, detection)


def machine(summary: Payload) -> str:
    m = summary["machine"]
    others = m.get("load", {})
    median, most = others.get("busy_cores_by_others_median", "?"), others.get("busy_cores_by_others_max", "?")
    busy = f"{median} (max {most})"
    return (
        f"{summary['mode']} run on {m['cpu_model']}, {m['logical_cpus']} logical CPUs, "
        f"{m['memory_gib']} GiB, {m['python']}, commit {m['git_commit']}, started {m['started_at']}; "
        f"cores kept busy by other users, median: {busy}"
    )


def _ns(value: float) -> str:
    for unit, scale in (("ms", 1e6), ("us", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.3g} ns"


def overhead_table(overhead: Payload) -> str:
    rows = [("case", "buggy", "fixed", "fixed/buggy", "added, share of a set-up")]
    for pair in overhead["pairs"]:
        share = pair.get("added_share_of_setup")
        rows.append(
            (
                pair["case"],
                _ns(pair["buggy"]["ns_per_op"]),
                _ns(pair["fixed"]["ns_per_op"]),
                f"{pair['ratio']:.2f}x" if pair["ratio"] else "n/a",
                f"{share:+.3%}" if isinstance(share, int | float) else "",
            )
        )
    return _table(rows)


def _median(stat: Any) -> str:
    """Milliseconds as "median (min-max)" (the column head says ms), or "never"."""
    if isinstance(stat, dict) and isinstance(stat.get("median"), int | float):
        return f"{stat['median'] * 1e3:.0f} ({stat['min'] * 1e3:.0f}-{stat['max'] * 1e3:.0f})"
    return str(stat)  # "never", as the benchmark writes it


RECOVERY_HEAD = (
    "sockets",
    "variant",
    "registered",
    "1st success",
    "after registered",
    "recovered",
    "failed before / after",
)


def recovery_table(recovery: Payload) -> str:
    """One row per socket setting and variant, within 120 columns: times after the restart
    in ms, median (min-max) over the repetitions; the socket settings spelled out under it."""
    rows = [RECOVERY_HEAD]
    settings: dict[str, str] = {}
    for sweep in recovery["sweeps"]:
        full = sweep.get("sockets") or f"fail-fast, SNDTIMEO {sweep['send_timeout_s']:g} s"
        name = sweep.get("sockets_name") or full
        settings[name] = full
        for variant, result in sweep["variants"].items():
            s = result["summary"]
            rows.append(
                (
                    name,
                    variant,
                    _median(s["registered_after_s"]),
                    _median(s["first_success_after_restart_s"]),
                    _median(s["first_success_after_registered_s"]),
                    str(s["runs_recovered"]),
                    _failures_split(result.get("runs", [])),
                )
            )
    notes = [
        "",
        "times in ms, median (min-max) over the repetitions: registered and 1st success count from the"
        " restart,",
        "'after registered' from the new prefill's registration; failed: requests sent before / after it"
        " registered",
        "sockets: " + "; ".join(settings.values()),
    ]
    return _table(rows) + "\n" + "\n".join(notes)


def _failures_split(runs: Sequence[Payload]) -> str:
    """Failed requests sent before the new prefill registered (nothing could serve them)
    and after it (the ones a fix is judged by), over every repetition."""
    before = after = 0
    for run in runs:
        registered = run.get("registered_after_s")
        for request in run.get("requests", []):
            if request.get("outcome") != "failed":
                continue
            waiting = isinstance(registered, int | float) and request["sent_s"] < registered
            before, after = (before + 1, after) if waiting else (before, after + 1)
    return f"{before} / {after}"


def targets(summary: Payload) -> str:
    marks = {True: "met", False: "MISSED", None: "not measured"}
    return "\n\n".join(
        f"{t['target']}\n    measured: {t['measured']}\n    verdict:  {marks[t['met']]}"
        for t in summary["targets"]
    )


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )
