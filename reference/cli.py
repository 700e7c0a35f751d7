"""The main job: run lessons against variants and print verdicts.

Exit status: 0 when every verdict equals its expectation (buggy: `bug`, fixed: `ok`,
an `--impl` module: `ok`, an upstream release: its history, `latent` included, and
`unknown` where that release lacks the lesson's component), 1 when one differs, 2 when
one is an unexpected `unknown`. Bad flags and unknown names get one line on
stderr naming the valid choices, exit 2; so does a variant that cannot be imported.
Ctrl-C: one line, exit 130.

Each variant is imported and run in a forked worker under a time bound per phase
(`reference/harness/isolation.py`, `--timeout`); `--in-process` runs unbounded, as the
library's `run_lesson` does (for a debugger), and refuses `--timeout`.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import itertools
import json
import math
import signal
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType

from reference.dataplane.discovery import BACKENDS
from reference.explore import cli as explore_cli
from reference.harness import deep
from reference.harness.isolation import (
    MAX_REPEAT,
    MAX_TIMEOUT,
    Interrupted,
    IsolationError,
    Watch,
    run_isolated,
)
from reference.harness.result import Result
from reference.harness.specs import VariantSpec
from reference.harness.table import GROUPS, decided_fields, expand_groups, format_table, impl_summary, legend
from reference.lessons import LESSONS, Lesson, Options, run_lesson
from reference.oneline_args import OneLineParser
from reference.transport import TRANSPORTS, runs_on, transport_unusable
from reference.transport.sockets import SOCKETS
from reference.variants import SHIPPED, Variant, VariantError


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def _repeat(text: str) -> int:
    value = _non_negative(text)
    if value > MAX_REPEAT:
        raise argparse.ArgumentTypeError(f"at most {MAX_REPEAT} trials, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not (0 < value <= MAX_TIMEOUT) or math.isnan(value):
        raise argparse.ArgumentTypeError(f"expected seconds > 0 and <= {MAX_TIMEOUT:g}, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m reference", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--lesson",
        action="append",
        choices=[*LESSONS, *GROUPS],
        help="repeatable; `fixes` (the four upstream fixes) or `residual` for a group",
    )
    parser.add_argument("--variant", action="append", choices=list(SHIPPED), help="repeatable")
    parser.add_argument("--impl", action="append", metavar="MODULE", help="your own variant module")
    parser.add_argument(
        "--sglang", action="append", metavar="PATH", help="upstream sglang: a wheel, source tree or install"
    )
    parser.add_argument("--check", metavar="ID", help="run only this check of each selected lesson")
    parser.add_argument(
        "--provoke", action="store_true", help="--sglang: add the trigger a latent defect lacks upstream"
    )
    parser.add_argument("--transport", choices=TRANSPORTS, default="mock")
    parser.add_argument(
        "--sockets",
        choices=SOCKETS,
        default="upstream",
        help="decode PUSH-socket options (default: upstream's)",
    )
    parser.add_argument("--backend", choices=BACKENDS, default="default", help="KV data plane (loopback)")
    parser.add_argument("--seed", type=_non_negative, default=0)
    parser.add_argument("--repeat", type=_repeat, default=0, help=f"stress trials, at most {MAX_REPEAT}")
    parser.add_argument("--json", action="store_true", help="print JSON on stdout")
    parser.add_argument("--verbose", action="store_true", help="whole symptoms in the table (not cut to 120)")
    parser.add_argument(
        "--timeout",
        type=_seconds,
        metavar="S",
        help="time bound per import and per lesson (default 20 s, loopback lessons 45 s)",
    )
    parser.add_argument("--in-process", action="store_true", help="no worker process, no time bound")
    parser.add_argument(
        "--budget",
        type=_seconds,
        metavar="SECONDS",
        default=deep.DEFAULT_BUDGET,
        help=f"seconds of deep checks per variant (default {deep.DEFAULT_BUDGET:g})",
    )
    parser.add_argument("--quick", action="store_true", help="the story and the checks only, no deep checks")
    parser.add_argument(
        "--report", type=Path, metavar="DIR", help="netns: each fault run's history and timeline"
    )
    explore_cli.add_arguments(parser)
    return parser


def _variants(args: argparse.Namespace, shipped: Sequence[str] = tuple(SHIPPED)) -> list[VariantSpec]:
    names = args.variant or ([] if args.impl or args.sglang else list(shipped))
    return (
        [VariantSpec("shipped", name) for name in names]
        + [VariantSpec("impl", m) for m in args.impl or []]
        + [VariantSpec("sglang", path, provoke=args.provoke) for path in args.sglang or []]
    )


def _has_check(lesson: Lesson, check_id: str, transport: str) -> bool:
    return any(c.id == check_id for c in lesson.checklist(transport))


# The explorations judge upstream's four fixes: by default the code before and after each.
# Hardened's extra bookkeeping multiplies the interleavings past the 30 s bound of two
# stale-bootstrap explorations; `--variant hardened` still runs it (reference/explore/README.md).
EXPLORED = ("buggy", "fixed")


def _explored_variants(args: argparse.Namespace) -> list[Variant]:
    return [spec.load() for spec in _variants(args, EXPLORED)]


def _run(
    lessons: list[Lesson], specs: list[VariantSpec], options: Options, args: argparse.Namespace
) -> list[Result]:
    budgets = deep.lesson_budgets(lessons, args.budget, options, LESSONS.values())
    if args.in_process:
        variants = [spec.load() for spec in specs]
        return [
            run_lesson(lesson, v, _budgeted(options, budgets, lesson)) for lesson in lessons for v in variants
        ]
    watch = Watch(show=_terminal_line if sys.stderr.isatty() and not args.json else None)
    try:
        with _term_stops_workers():
            per_variant = [_isolated(lessons, spec, options, budgets, args.timeout, watch) for spec in specs]
    except KeyboardInterrupt:
        so_far = watch.so_far()
        raise Interrupted(f"interrupted; so far, {so_far}" if so_far else "interrupted") from None
    finally:
        if watch.show is not None:
            _terminal_line("")
    for note in watch.notes:
        print(f"python -m reference: warning: {note}", file=sys.stderr)
    return [results[i] for i in range(len(lessons)) for results in per_variant]


def _isolated(
    lessons: list[Lesson],
    spec: VariantSpec,
    options: Options,
    budgets: dict[str, float],
    timeout: float | None,
    watch: Watch,
) -> list[Result]:
    """One worker per run of lessons with the same deep-check budget (one worker in all
    with `--quick`)."""
    results: list[Result] = []
    for budget, same in itertools.groupby(lessons, key=lambda lesson: budgets[lesson.id]):
        group = list(same)
        results += run_isolated(group, spec, dataclasses.replace(options, budget=budget), timeout, watch)
    return results


def _budgeted(options: Options, budgets: dict[str, float], lesson: Lesson) -> Options:
    return dataclasses.replace(options, budget=budgets[lesson.id])


def _terminal_line(text: str) -> None:
    print(f"\r\x1b[K{text}", end="", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _term_stops_workers() -> Iterator[None]:
    """SIGTERM unwinds like an exception, so the workers are stopped on the way out."""
    try:
        previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def counterexamples(result: Result) -> list[tuple[str, str]]:
    """(check id, its counterexample as text) for each simulation check that found one: the
    shrunk timeline and its replay command (an exploration's trace, hundreds of accesses
    long, is shown by its replay command, which its symptom names)."""
    found = []
    for check in result.checks:
        if check.verdict != "bug":
            continue
        timeline = check.details.get("counterexample")
        replay = check.details.get("replay")
        if isinstance(timeline, str):
            found.append((check.id, f"{timeline}\n  replay: python -m reference --replay {replay}"))
    return found


def _json_row(result: Result) -> dict:
    stack = result.details.get("stack")
    row = {**result.to_json(), "stack": stack} if isinstance(stack, str) else result.to_json()
    return {**row, **decided_fields(result)}  # upstream: `label` (adapter-decided) and `decided_by`


def exit_code(results: Sequence[Result]) -> int:
    if any(r.verdict == "unknown" and not _expected_absence(r) for r in results):
        return 2
    return 0 if all(r.as_expected for r in results) else 1


def _expected_absence(result: Result) -> bool:
    """An `unknown` the expectations predict: an upstream release without the lesson's
    component says "not present in <release>: <component>" (never a timeout or a crash)."""
    return result.as_expected and "not present in " in result.symptom


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except IsolationError as exc:
        print(f"python -m reference: {'' if exc.exit_status == 130 else 'error: '}{exc}", file=sys.stderr)
        return exc.exit_status
    except VariantError as exc:
        print(f"python -m reference: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("python -m reference: interrupted", file=sys.stderr)
        return 130


def _saved_upstream(spec: dict[str, str]) -> ModuleType | None:
    """The upstream release a saved simulation counterexample names (`--replay FILE`)."""
    return VariantSpec("sglang", spec["sglang"]).load().module if "sglang" in spec else None


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    named, args.lesson = args.lesson, expand_groups(args.lesson) if args.lesson else None
    if args.in_process and args.timeout is not None:
        parser.error("--timeout bounds the worker process, which --in-process does not start; pick one")
    if args.replay is not None and not args.explore:  # a saved simulation counterexample
        return deep.replay_file(args.replay, _saved_upstream)
    if args.explore and args.lesson and any(name in GROUPS for name in named or ()):
        # a group keeps its explored lessons; a lesson named alone still gets the error
        named_alone = [n for n in named or () if n not in GROUPS]
        args.lesson = [i for i in args.lesson if i in explore_cli.PROPERTIES or i in named_alone]
        if not args.lesson:
            print("python -m reference: error: no lesson of that group is explored", file=sys.stderr)
            return 2
    if args.explore:  # reference/explore loads the variants itself and runs its own children
        return explore_cli.main(args, sys.argv[1:] if argv is None else argv, _explored_variants)
    variants = _variants(args)
    options = Options(
        transport=args.transport,
        seed=args.seed,
        repeat=args.repeat,
        backend=args.backend,
        sockets=args.sockets,
        check=args.check,
        provoke=args.provoke,
        quick=args.quick,
    )
    lessons = [LESSONS[i] for i in args.lesson or LESSONS]
    unusable = transport_unusable(args.transport)
    if unusable:
        print(f"python -m reference: error: --transport {args.transport}: {unusable}", file=sys.stderr)
        return 2
    for lesson in [x for x in lessons if not runs_on(x.transports, args.transport)]:
        print(f"skipped {lesson.id}: no {args.transport} scenario", file=sys.stderr)
    for lesson in [x for x in lessons if args.backend not in x.backends]:
        print(f"skipped {lesson.id}: moves no KV bytes over backend {args.backend}", file=sys.stderr)
    lessons = [x for x in lessons if runs_on(x.transports, args.transport) and args.backend in x.backends]
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
    results = _run(lessons, variants, options, args)
    if args.report is not None:
        from reference.netns import report

        written = report.write(results, args.report)
        print(f"wrote {len(written) // 2} history/timeline pair(s) to {args.report}", file=sys.stderr)
    if args.json:
        print(json.dumps({"results": [_json_row(r) for r in results]}, indent=2))
    else:
        print(format_table(results, verbose=args.verbose))
        print(legend(results, verbose=args.verbose))
        for spec in [s for s in variants if s.kind == "impl"]:
            print(impl_summary(results, spec.name))
        for r in [r for r in results if isinstance(r.details.get("stack"), str)]:
            print(f"\n{r.lesson} on {r.variant}: {r.symptom}; its threads then:\n{r.details['stack']}")
        for r in results:
            for check, text in counterexamples(r):
                print(f"\n{r.lesson} on {r.variant}: {check} found a counterexample:\n{text}")
        for lesson in [LESSONS[i] for i in dict.fromkeys(named or ()) if i in LESSONS]:
            if lesson.notes is not None:  # extra text, only when the lesson was asked for by name
                print(f"\n{lesson.notes()}")
    return exit_code(results)
