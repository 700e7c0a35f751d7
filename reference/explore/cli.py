"""`python -m reference --explore`: run the explorations, print findings.

frontrun needs its environment (a preload library and `FRONTRUN_ACTIVE=1`, what
`frontrun python ...` sets up). When this process lacks it, the command runs itself
again under that environment and returns its exit status; when frontrun is missing it
says so in one line (exit 2).

Exit status as the main job: 0 when every claimed property's verdict is the expected
one (buggy: `bug`, fixed and `--impl`: `ok`), 1 when one differs, 2 when one is
`unknown`. Properties the upstream fix does not claim are reported, never judged.
`--timeout S` bounds importing the variants and building one world (default 10 s): a
variant that hangs there gets `unknown` (or, at import, a one-line error) instead of
hanging the run, and the whole command is killed (with every process it started) once it
overruns every exploration's bounds. With `--replay SCHEDULE`, one property is run on that
one interleaving: exit 1 when its check finds problems there, 0 when not.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence

from reference.explore import ON_REQUEST, PROPERTIES
from reference.explore.property import Property
from reference.explore.runner import (
    SETUP_BOUND,
    TIME_BOUND,
    Finding,
    Hung,
    bounded,
    explore,
    frontrun_active,
    replay,
)
from reference.explore.trace import ScheduleError, decode
from reference.variants import Variant, VariantError

PROG = "python -m reference"
REEXEC = "REFERENCE_EXPLORE_REEXEC"  # set in the re-executed child, so it never loops


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--explore", action="store_true", help="explore thread interleavings (frontrun DPOR) instead"
    )
    parser.add_argument("--property", action="append", metavar="ID", help="with --explore: one property")
    parser.add_argument(
        "--replay",
        metavar="FILE|SCHEDULE",
        help="replay a saved simulation counterexample FILE; with --explore, one interleaving SCHEDULE",
    )


def _error(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2


def _reexec(argv: Sequence[str], runs: int, setup: float) -> int:
    """Run under frontrun's environment in a child, killed (its whole session) when it
    overruns: every exploration's search and set-up bounds, plus a margin. A variant that
    loops inside an explored call cannot keep the command, or a process, alive."""
    if os.environ.get(REEXEC) == "1":
        return _error("--explore: frontrun did not activate in the re-executed process")
    try:
        from frontrun import cli as frontrun_cli
    except ImportError as exc:
        return _error(f"--explore needs frontrun (pip install frontrun==0.7.0, the test extra): {exc}")
    env = frontrun_cli._build_env(frontrun_cli._find_preload_library())
    env[REEXEC] = "1"
    limit = setup + runs * (TIME_BOUND + setup) + 10.0
    child = subprocess.Popen([sys.executable, "-m", "reference", *argv], env=env, start_new_session=True)
    try:
        return child.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        return _error(f"--explore: hit its time bound ({limit:g} s) for {runs} exploration(s); stopped")
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()


def _select(args: argparse.Namespace) -> list[Property] | str:
    lessons = args.lesson or list(PROPERTIES)
    unexplored = [lesson for lesson in lessons if lesson not in PROPERTIES]
    if unexplored:
        return f"no exploration for lesson {unexplored[0]} (explored: {', '.join(PROPERTIES)})"
    props = [prop for lesson in lessons for prop in PROPERTIES[lesson]]
    if args.property:  # a property run only on request is one of its lesson's when named
        props += [prop for lesson in lessons for prop in ON_REQUEST.get(lesson, ())]
        known = {prop.id for prop in props}
        unknown = [name for name in args.property if name not in known]
        if unknown:
            return (
                f"no property {unknown[0]!r} in the selected lessons (choose from {', '.join(sorted(known))})"
            )
        props = [prop for prop in props if prop.id in args.property]
    return props


def main(
    args: argparse.Namespace,
    argv: Sequence[str],
    load_variants: Callable[[argparse.Namespace], list[Variant]],
) -> int:
    selected = _select(args)
    if isinstance(selected, str):
        return _error(selected)
    if args.replay is not None:
        problem = _replay_problem(args, selected)
        if problem:
            return _error(problem)
    bound = args.timeout or SETUP_BOUND
    if not frontrun_active():
        named = len(args.variant or ()) + len(args.impl or ()) + len(args.sglang or ()) or 2
        return _reexec(argv, len(selected) * named, bound)
    try:
        variants = bounded(lambda: load_variants(args), bound, "import")
    except (VariantError, Hung) as exc:
        return _error(f"--explore: {exc}")
    if args.replay is not None:
        return _replay(args.replay, selected, variants)
    findings = [explore(prop, variant, bound) for prop in selected for variant in variants]
    if args.json:
        print(json.dumps({"explorations": [f.to_json() for f in findings]}, indent=2))
    else:
        print(format_findings(findings, {v.name: v.flag for v in variants if v.flag}))
    return exit_code(findings)


def exit_code(findings: Sequence[Finding]) -> int:
    judged = [f for f in findings if f.claimed and f.expected is not None]  # not hardened-only on buggy/fixed
    if any(f.verdict == "unknown" for f in judged):
        return 2
    return 0 if all(f.as_expected() for f in judged) else 1


def _replay_problem(args: argparse.Namespace, props: list[Property]) -> str | None:
    """Why `--replay` cannot run with these flags, checked before anything is explored."""
    if len(props) != 1:
        return "--replay needs exactly one property (--lesson ID --property ID)"
    if len(args.variant or []) + len(args.impl or []) + len(args.sglang or []) != 1:
        return "--replay needs exactly one variant (--variant, --impl or --sglang)"
    try:
        decode(args.replay, len(props[0].workers))
    except ScheduleError as exc:
        return str(exc)
    return None


def _replay(text: str, props: list[Property], variants: list[Variant]) -> int:
    prop, variant = props[0], variants[0]
    schedule = decode(text, len(prop.workers))
    problems, trace = replay(prop, variant, schedule)
    verdict = "bug: " + "; ".join(problems) if problems else "holds on this interleaving"
    print(f"{prop.lesson}/{prop.id} on {variant.name}, replayed: {verdict}\n\n{trace}")
    return 1 if problems else 0


def format_findings(findings: Sequence[Finding], flags: Mapping[str, str] | None = None) -> str:
    """`flags`: how the command line names a variant its name does not (`--sglang PATH`)."""
    rows = [("lesson", "property", "variant", "verdict", "expected", "interleavings", "time", "symptom")]
    for f in findings:
        mark = "" if f.as_expected() else " !"
        expected = f.expected or ("(hardened only)" if f.claimed else "(not claimed)")
        rows.append((f.lesson, f.property, f.variant, f.verdict + mark, expected, str(f.interleavings),
                     f"{f.seconds:.2f}s", f.symptom))  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(7)]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row[:7], widths, strict=True)) + "  " + row[7]
        for row in rows
    ]
    for f in findings:
        if f.schedule is None:
            continue
        command = f"{PROG} --explore --lesson {f.lesson} --property {f.property}"
        flag = (flags or {}).get(f.variant) or _variant_flag(f.variant)
        command += f" {flag} --replay {f.schedule}"
        lines += [
            "",
            f"{f.lesson}/{f.property} on {f.variant}: counterexample",
            f"  replay: {command}",
            "",
            f.trace or "",
        ]
    return "\n".join(lines)


def _variant_flag(name: str) -> str:
    return f"--variant {name}" if name in ("buggy", "fixed") else f"--impl {name}"
