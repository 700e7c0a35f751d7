"""Every method the four upstream fixes changed runs from the wheel while its lesson runs.

The list is read off the four pull requests' diffs (each entry names its PR). A run of
each lesson on 0.5.18 (before three of the fixes) and 0.5.19 (after) is traced with
`sys.settrace` on every thread; a method counts only if a code object whose
`co_filename` is inside the wheel (`<sglang-0.5.19>/sglang/...`) and whose qualified
name is the method's was called. A method the adapter replaced with its own code, or
never drove, fails the test, naming it.

Not listed, on purpose: the fixes' hunks in the mori and nixl backends (#36029 applied
the same send-failure invalidation there); the lessons drive the mooncake backend,
upstream's default (why the others are not driven: reference/upstream/README.md, "Not
driven"). `TRACED_SHARE` prints the share per fix (`-s` shows it).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from upstream_wheels import wheel

from reference.harness.lesson import Options, run_lesson
from reference.lessons import LESSONS
from reference.upstream import load_sglang

pytestmark = pytest.mark.upstream

PR = "https://github.com/sgl-project/sglang/pull/"
# (PR, lesson that drives it, qualified name, first release that has the method)
TOUCHED: list[tuple[str, str, str, str]] = [
    (PR + "24539", "failed-resurrect", "CommonKVManager.update_status", "0"),
    (PR + "36351", "live-set-race", "CommonKVManager._handle_node_failure", "0"),
    (PR + "36029", "stale-bootstrap", "CommonKVReceiver.__init__", "0"),
    (PR + "36029", "stale-bootstrap", "CommonKVReceiver._setup_bootstrap_infos", "0"),
    (PR + "36029", "stale-bootstrap", "CommonKVReceiver._check_waiting_timeout", "0"),
    (PR + "36029", "stale-bootstrap", "CommonKVReceiver.invalidate_cached_bootstrap_infos", "0.5.19"),
    (PR + "36029", "stale-bootstrap", "MooncakeKVReceiver._register_kv_args", "0"),
    (PR + "36029", "stale-bootstrap", "MooncakeKVReceiver.send_metadata", "0"),
    (PR + "33048", "task-refs", "CommonKVBootstrapServer.__init__", "0"),
    (PR + "33048", "task-refs", "CommonKVBootstrapServer._run_server", "0"),
    (PR + "33048", "task-refs", "DPDispatcher.__init__", "0"),
    (PR + "33048", "task-refs", "DPDispatcher.start", "0"),
]
VERSIONS = ("0.5.18", "0.5.19")


@contextmanager
def traced(prefix: str) -> Iterator[set[str]]:
    """Qualified names of the code objects under `prefix` called, on every thread."""
    called: set[str] = set()

    def tracer(frame, event, _arg):
        code = frame.f_code
        if event == "call" and code.co_filename.startswith(prefix):
            called.add(code.co_qualname)
        return None  # no per-line tracing

    previous = sys.gettrace()
    threading.settrace(tracer)
    sys.settrace(tracer)
    try:
        yield called
    finally:
        sys.settrace(previous)
        threading.settrace(previous)  # type: ignore[arg-type]


def ran(version: str, lesson_id: str) -> set[str]:
    variant = load_sglang(str(wheel(version)))
    with traced(f"<sglang-{version}>/sglang/srt/disaggregation/") as called:
        result = run_lesson(LESSONS[lesson_id], variant, Options())
    assert result.verdict != "unknown", result.symptom
    return called


def expected(version: str) -> list[tuple[str, str, str]]:
    have = tuple(int(x) for x in version.split("."))
    return [
        (pr, lesson, name)
        for pr, lesson, name, since in TOUCHED
        if since == "0" or have >= tuple(int(x) for x in since.split("."))
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_every_touched_method_ran_from_the_wheel(version):
    runs = {lesson: ran(version, lesson) for lesson in {lesson for _, lesson, _, _ in TOUCHED}}
    missing = [f"{name} ({pr})" for pr, lesson, name in expected(version) if name not in runs[lesson]]
    share: dict[str, tuple[int, int]] = {}
    for pr, lesson, name in expected(version):
        done, total = share.get(pr, (0, 0))
        share[pr] = (done + (name in runs[lesson]), total + 1)
    print(f"\n{version}: " + ", ".join(f"#{pr.rsplit('/', 1)[1]} {d} of {t}" for pr, (d, t) in share.items()))
    assert not missing, f"{version}: did not run from the wheel: {', '.join(missing)}"


def test_the_trace_tells_adapter_code_from_the_wheels():
    """The receiver's socket is adapter code (`_connect_to_bootstrap_server` replaced):
    upstream's method of that name is never called, and the trace says so."""
    called = ran("0.5.19", "stale-bootstrap")
    assert "CommonKVReceiver._connect_to_bootstrap_server" not in called
    assert "CommonKVReceiver._setup_bootstrap_infos" in called
