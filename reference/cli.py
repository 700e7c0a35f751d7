"""The main job: run lessons against variants and print verdicts.

Exit status: 0 when every verdict equals its expectation (buggy: `bug`, fixed: `ok`,
an `--impl` module: `ok`), 1 when one differs, 2 when one is `unknown`. Bad flags
and unknown names get one line on stderr naming the valid choices, exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from reference.dataplane.discovery import BACKENDS
from reference.explore import cli as explore_cli
from reference.harness.checks import score
from reference.harness.result import Result
from reference.lessons import LESSONS, Lesson, Options, run_lesson
from reference.oneline_args import OneLineParser
from reference.transport import TRANSPORTS
from reference.transport.sockets import SOCKETS
from reference.upstream import load_sglang
from reference.variants import SHIPPED, Variant, VariantError, load_impl, shipped


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m reference", description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", action="append", choices=list(LESSONS), help="repeatable")
    parser.add_argument("--variant", action="append", choices=list(SHIPPED), help="repeatable")
    parser.add_argument("--impl", action="append", metavar="MODULE", help="your own variant module")
    parser.add_argument(
        "--sglang", action="append", metavar="PATH", help="upstream sglang: a wheel, source tree or install"
    )
    parser.add_argument("--check", metavar="ID", help="run only this check of each selected lesson")
    parser.add_argument("--transport", choices=TRANSPORTS, default="mock")
    parser.add_argument(
        "--sockets",
        choices=SOCKETS,
        default="upstream",
        help="decode PUSH-socket options (default: upstream's)",
    )
    parser.add_argument("--backend", choices=BACKENDS, default="default", help="KV data plane (loopback)")
    parser.add_argument("--seed", type=_non_negative, default=0)
    parser.add_argument("--repeat", type=_non_negative, default=0, help="stress trials per lesson")
    parser.add_argument("--json", action="store_true", help="print JSON on stdout")
    explore_cli.add_arguments(parser)
    return parser


def _variants(args: argparse.Namespace) -> list[Variant]:
    names = args.variant or ([] if args.impl or args.sglang else list(SHIPPED))
    return (
        [shipped(name) for name in names]
        + [load_impl(m) for m in args.impl or []]
        + [load_sglang(path) for path in args.sglang or []]
    )


def _has_check(lesson: Lesson, check_id: str, transport: str) -> bool:
    return any(c.id == check_id for c in lesson.checklist(transport))


def exit_code(results: Sequence[Result]) -> int:
    if any(r.verdict == "unknown" for r in results):
        return 2
    return 0 if all(r.as_expected for r in results) else 1


def _transport(result: Result) -> str:
    return f"{result.transport}+{result.backend}" if result.backend else result.transport


def format_table(results: Sequence[Result]) -> str:
    rows = [("lesson", "variant", "transport", "verdict", "expected", "sockets", "checks", "time", "symptom")]
    for r in results:
        verdict = r.verdict + ("" if r.as_expected else " !")
        checks = score(r.checks) if r.checks else "-"
        where, time = _transport(r), f"{r.seconds:.2f}s"
        rows.append((r.lesson, r.variant, where, verdict, r.expected, r.sockets, checks, time, r.symptom))
    last = len(rows[0]) - 1  # the symptom, left unpadded
    widths = [max(len(row[i]) for row in rows) for i in range(last)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row[:last], widths, strict=True)) for row in rows]
    return "\n".join(f"{line}  {row[last]}" for line, row in zip(lines, rows, strict=True))


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.explore:
        return explore_cli.main(args, sys.argv[1:] if argv is None else argv, _variants)
    try:
        variants = _variants(args)
    except VariantError as exc:
        print(f"python -m reference: error: {exc}", file=sys.stderr)
        return 2
    options = Options(
        transport=args.transport,
        seed=args.seed,
        repeat=args.repeat,
        backend=args.backend,
        sockets=args.sockets,
    )
    lessons = [LESSONS[i] for i in args.lesson or LESSONS]
    for lesson in [x for x in lessons if args.transport not in x.transports]:
        print(f"skipped {lesson.id}: no {args.transport} scenario", file=sys.stderr)
    for lesson in [x for x in lessons if args.backend not in x.backends]:
        print(f"skipped {lesson.id}: moves no KV bytes over backend {args.backend}", file=sys.stderr)
    lessons = [x for x in lessons if args.transport in x.transports and args.backend in x.backends]
    if not lessons:
        where = (
            args.transport if args.backend == "default" else f"{args.transport} with backend {args.backend}"
        )
        print(f"python -m reference: error: no selected lesson runs on {where}", file=sys.stderr)
        return 2
    if args.check:
        lessons = [x for x in lessons if _has_check(x, args.check, args.transport)]
        if not lessons:
            print(
                f"python -m reference: error: no selected lesson has check {args.check!r} on "
                f"{args.transport} (see each lesson's README for its checks)",
                file=sys.stderr,
            )
            return 2
    results = [run_lesson(lesson, v, options, only=args.check) for lesson in lessons for v in variants]
    if args.json:
        print(json.dumps({"results": [r.to_json() for r in results]}, indent=2))
    else:
        print(format_table(results))
        for lesson in [LESSONS[i] for i in dict.fromkeys(args.lesson or ())]:
            if lesson.notes is not None:  # extra text, only when the lesson was asked for by name
                print(f"\n{lesson.notes()}")
    return exit_code(results)
