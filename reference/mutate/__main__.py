"""`python -m reference.mutate`: generate the semantic mutants, judge them with the default
`--impl` run, write `results.json` and `RESULTS.md` (ci/semantic_mutation.sh)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from reference.mutate import report
from reference.mutate.mutants import ROOT, VARIANTS, generate, sample
from reference.mutate.operators import OPERATORS
from reference.mutate.runner import Judge, Outcome, RunError

HERE = Path(__file__).resolve().parent


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m reference.mutate", description=__doc__)
    parser.add_argument("--variant", action="append", choices=VARIANTS, help="repeatable; default both")
    parser.add_argument("--operator", action="append", choices=list(OPERATORS), help="repeatable")
    parser.add_argument("--only", action="append", metavar="KEY", help="judge only this mutant (repeatable)")
    parser.add_argument("--sample", type=_positive, help="judge this many mutants, drawn with --seed")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=_positive, default=2)
    parser.add_argument("--timeout", type=float, default=120.0, help="wall-clock bound per mutant run")
    parser.add_argument("--impl-args", default="", help="extra arguments for each `--impl` run")
    parser.add_argument(
        "--prefilter-args",
        help="a cheaper first stage (e.g. --quick): only its survivors get the default run",
    )
    parser.add_argument("--list", action="store_true", help="list the mutants, judge none")
    parser.add_argument("--out", type=Path, default=HERE, help="folder for results.json and RESULTS.md")
    return parser


def _commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    dirty = (
        git("status", "--porcelain", "--", "reference", ":!reference/mutate") != ""
    )  # what decides verdicts
    return git("rev-parse", "HEAD") + (" (with uncommitted changes under reference/)" if dirty else "")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    variants = tuple(args.variant or VARIANTS)
    mutants = [m for m in generate(variants) if not args.operator or m.edit.operator in args.operator]
    total = len(mutants)
    if args.only:
        unknown = set(args.only) - {m.key for m in mutants}
        if unknown:
            print(f"python -m reference.mutate: error: no mutant {sorted(unknown)[0]}", file=sys.stderr)
            return 2
        mutants = [m for m in mutants if m.key in args.only]
    chosen = sample(mutants, args.sample, args.seed)
    if args.list:
        for m in chosen:
            print(f"{m.key}  {m.name}  {m.edit.description}")
        return 0
    prefilter = None if args.prefilter_args is None else shlex.split(args.prefilter_args)
    judge = Judge(timeout=args.timeout, extra=shlex.split(args.impl_args), prefilter=prefilter)
    done = 0

    def progress(outcome: Outcome) -> None:
        nonlocal done
        done += 1
        diff = f" ({outcome.differences[0]})" if outcome.differences else ""
        print(f"[{done}/{len(chosen)}] {outcome.status:12} {outcome.mutant.name}{diff}", file=sys.stderr)

    commit, start = _commit(), time.monotonic()  # what was measured: the tree when the run began
    load_start = os.getloadavg()[0]  # the machine's load: the deep checks are bounded in wall-clock time
    try:
        outcomes = judge.judge_all(chosen, jobs=args.jobs, progress=progress)
    except RunError as exc:
        print(f"python -m reference.mutate: error: {exc}", file=sys.stderr)
        return 2
    finally:
        judge.close()
    run = {
        "commit": commit,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "seconds": round(time.monotonic() - start, 1),
        "load_average": [round(load_start, 2), round(os.getloadavg()[0], 2)],  # 1 min, at start and end
        "jobs": args.jobs,
        "timeout": args.timeout,
        "impl_args": args.impl_args,
        "prefilter_args": args.prefilter_args,
        "generated": total,
        "sample": args.sample,
        "seed": args.seed,
        "variants": list(variants),
        "baselines_settled": judge.settled,  # a baseline verdict one run left at a time bound
        "baselines": {
            f"stage {stage + 1}: {v} on {', '.join(ls)}": verdicts
            for (stage, v, ls), verdicts in judge.baselines.items()
        },
    }
    for note in judge.settled:
        print(f"baseline settled (one run cut at a time bound): {note}", file=sys.stderr)
    data = report.to_json(run, outcomes)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(data, indent=1) + "\n")
    (args.out / "RESULTS.md").write_text(report.markdown(data, args.out))
    summary = report.summary(data)
    print(summary["line"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
