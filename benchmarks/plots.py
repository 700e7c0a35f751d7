"""PNG plots of a run: overhead ratios, detection times, recovery timelines.

matplotlib with the Agg backend (no display needed). Each function takes the JSON
payload the run wrote and a path, so the plots can be redrawn from committed results.
They follow the notebooks' one convention (`reference/teaching/plots.py`): a colour per
variant, outcome colours that are no variant's, a dotted line only for a target
("should be"), dashed grey lines for events.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from benchmarks.recovery_metrics import sweep_label
from reference.teaching.plots import COLOURS, EVENT_LINE, OUTCOMES, SHOULD_BE

OUTCOME_COLOURS = {"success": OUTCOMES["Success"][1], "failed": OUTCOMES["Failed"][1]}


def _ns(delta: float) -> str:
    for unit, scale in (("ms", 1e6), ("us", 1e3)):
        if abs(delta) >= scale:
            return f"{delta / scale:+.1f} {unit}"
    return f"{delta:+.0f} ns"


def overhead_ratios(overhead: dict[str, Any], path: Path) -> None:
    pairs = overhead["pairs"]
    names = [p["case"] for p in pairs]
    ratios = [p["ratio"] or 0.0 for p in pairs]
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(pairs) + 1.5))
    # Bars grow from 1.0 on a log axis: right when the fix costs more, left when less.
    colours = ["tab:orange" if r > 1 else "tab:blue" for r in ratios]
    bars = ax.barh(range(len(pairs)), [r - 1 for r in ratios], left=1.0, color=colours)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yticks(range(len(pairs)), names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("fixed / buggy (bars) and hardened / buggy (diamonds), median time per op (log scale)")
    for bar, p in zip(bars, pairs, strict=True):
        label = f" {p['ratio']:.2f}x ({_ns(p['added_ns'])})" if p["ratio"] else " n/a"
        ax.text(
            max(1.0, p["ratio"] or 1.0), bar.get_y() + bar.get_height() / 2, label, va="center", fontsize=7
        )
    hardened = [(i, p["hardened_ratio"]) for i, p in enumerate(pairs) if p.get("hardened_ratio")]
    if hardened:
        ax.scatter([r for _, r in hardened], [i for i, _ in hardened], marker="D", s=18, color="tab:green",
                   zorder=3, label="hardened / buggy")  # fmt: skip
        ax.legend(loc="lower right", fontsize=7)
    ratios += [r for _, r in hardened]
    ax.set_xlim(min([*ratios, 1.0]) / 1.5, max([*ratios, 1.0]) * 8)
    ax.set_title(f"Lock overhead of the fixes ({overhead['mode']} run)")
    fig.tight_layout()
    fig.savefig(path, dpi=120, metadata={"Software": None})
    plt.close(fig)


def detection_times(detection: dict[str, Any], path: Path) -> None:
    """Every variant's detection times per configuration, side by side in its colour."""
    keys = list(dict.fromkeys((c["interval_s"], c["max_failures"]) for c in detection["configs"]))
    variants = list(dict.fromkeys(c["variant"] for c in detection["configs"]))
    fig, ax = plt.subplots(figsize=(8, 4))
    step = 0.6 / max(len(variants), 1)
    labelled: set[str] = set()
    for c in detection["configs"]:
        i = keys.index((c["interval_s"], c["max_failures"]))
        x = i - 0.3 + step * (variants.index(c["variant"]) + 0.5)
        seen = [t * 1e3 for t in c["detection_s"] if t is not None]
        missed = sum(t is None for t in c["detection_s"])
        name = c["variant"] if c["variant"] not in labelled else "_nolegend_"
        labelled.add(c["variant"])
        tint = COLOURS.get(c["variant"], "#455a64")
        ax.scatter([x] * len(seen), seen, s=12, color=tint, zorder=3, label=name)
        if missed:
            ax.text(x, c["bound_s"] * 1e3, f"{missed} missed", fontsize=7, ha="center", va="bottom")
        bound = "bound (should be below)" if "bound" not in labelled else "_nolegend_"
        labelled.add("bound")
        ax.hlines(c["bound_s"] * 1e3, i - 0.35, i + 0.35, label=bound, **SHOULD_BE)
        low, high = (v * 1e3 for v in c["expected_range_s"])
        ax.fill_between([i - 0.3, i + 0.3], low, high, color="#9e9e9e", alpha=0.15, linewidth=0)
    ax.set_xticks(range(len(keys)), [f"{iv * 1e3:.0f} ms x {mf}" for iv, mf in keys], rotation=30, fontsize=8)
    ax.set_xlabel("heartbeat interval x max failures")
    ax.set_ylabel("kill -> all rooms Failed (ms)")
    ax.set_title(
        "Detection per variant (dots); dotted: the bound interval x (failures + 1); grey: expected range"
    )
    ax.title.set_fontsize(9)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120, metadata={"Software": None})
    plt.close(fig)


def recovery_timeline(recovery: dict[str, Any], path: Path) -> None:
    """Rows: variants; columns: socket options. Every request of the first repetition."""
    sweeps = recovery["sweeps"]
    variants = list(sweeps[0]["variants"])
    fig, axes = plt.subplots(
        len(variants), len(sweeps), figsize=(6 * len(sweeps), 2.8 * len(variants)), sharex=True, squeeze=False
    )
    for col, sweep in enumerate(sweeps):
        for row, name in enumerate(variants):
            _recovery_panel(axes[row, col], sweep["variants"][name]["runs"][0], name, sweep_label(sweep))
        axes[-1, col].set_xlabel("request send time relative to the prefill restart (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=120, metadata={"Software": None})
    plt.close(fig)


def _recovery_panel(ax: Any, run: dict[str, Any], name: str, sockets: str) -> None:
    for outcome, colour in OUTCOME_COLOURS.items():
        points = [r for r in run["requests"] if r["outcome"] == outcome]
        xs, ys = [r["sent_s"] for r in points], [max(r["latency_s"], 1e-4) * 1e3 for r in points]
        ax.scatter(xs, ys, s=10, color=colour, label=f"{outcome} ({len(points)})")
    ax.axvline(0.0, label="prefill killed + restarted", **EVENT_LINE)
    if isinstance(run.get("registered_after_s"), int | float):
        ax.axvline(
            run["registered_after_s"], label="new prefill registered", **(EVENT_LINE | {"color": "#212121"})
        )
    ax.set_yscale("log")
    ax.set_ylim(0.2, 3e4)  # room above the slowest request (a send timeout) for the legend
    ax.set_ylabel("latency (ms)")
    first = run["first_success_after_restart_s"]
    first_text = f"{first * 1e3:.0f} ms" if isinstance(first, int | float) else first
    ax.set_title(f"{name}, {sockets}: first success after restart {first_text}", fontsize=9)
    ax.legend(loc="upper left", fontsize=7, ncols=2)
