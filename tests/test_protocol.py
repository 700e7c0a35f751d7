"""The variant protocol and what a broken `--impl` module gets: one line or `unknown`
with the reason, never a traceback (CLI, library and `pytest --impl`)."""

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import reference.buggy
import reference.fixed
from reference.lessons import LESSONS, Options, run_lesson
from reference.protocol import PROTOCOLS, KVManagerProtocol, missing_members, protocol_members
from reference.variants import VariantError, load_impl

ROOT = Path(__file__).resolve().parents[1]
FULL_MANAGER = "from reference.common.manager import ManagerBase\n"
# Lessons a module with only a KVManager can run (others stop at "variant lacks ...").
MANAGER_LESSONS = [
    lesson for lesson in LESSONS.values() if {n.split(".")[0] for n in lesson.needs} == {"KVManager"}
]


@pytest.fixture
def impl(tmp_path, request):
    """Write a variant module to a file; return its path (unique name per test)."""
    name = f"impl_{request.node.name.replace('[', '_').replace(']', '').replace('-', '_')}"

    def write(source: str) -> str:
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        return str(path)

    yield write
    sys.modules.pop(name, None)


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=180, cwd=ROOT)


def test_protocol_members_are_what_the_scenarios_call():
    assert set(protocol_members(KVManagerProtocol)) == {
        "update_status", "check_status", "clear", "record_failure", "add_prefill", "track_room",
        "_cleanup_room_tracking", "_handle_node_failure", "start_heartbeat", "heartbeat_alive", "close",
    }  # fmt: skip


@pytest.mark.parametrize("module", [reference.buggy, reference.fixed])
def test_shipped_variants_follow_every_protocol(module):
    assert missing_members(module, tuple(PROTOCOLS)) == []
    assert missing_members(module, tuple(need for lesson in LESSONS.values() for need in lesson.needs)) == []


def test_a_missing_method_is_named(impl):
    variant = load_impl(impl("class KVManager:\n    def update_status(self, room, status): ...\n"))
    result = run_lesson(LESSONS["live-set-race"], variant, Options())
    assert result.verdict == "unknown"
    assert result.symptom.startswith("variant lacks KVManager.check_status, KVManager.clear")
    assert "KVManager._handle_node_failure" in result.symptom


@pytest.mark.parametrize(
    ("raised", "symptom"),
    [
        ('ValueError("my bug\\nsecond line")', "scenario raised ValueError: my bug second line"),
        ("SystemExit(3)", "scenario raised SystemExit: 3"),
    ],
)
def test_a_raising_method_is_unknown_with_the_reason(impl, raised, symptom):
    source = (
        f"class KVManager(ManagerBase):\n    def update_status(self, room, status):\n        raise {raised}"
    )
    variant = load_impl(impl(FULL_MANAGER + source))
    for lesson in MANAGER_LESSONS:
        result = run_lesson(lesson, variant, Options())
        assert (result.verdict, result.symptom) == ("unknown", symptom)


def test_a_wrong_constructor_is_unknown(impl):
    source = FULL_MANAGER + "class KVManager(ManagerBase):\n    def __init__(self): pass\n"
    variant = load_impl(impl(source))
    result = run_lesson(LESSONS["failed-resurrect"], variant, Options())
    assert result.verdict == "unknown" and "TypeError" in result.symptom


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        ("import no_such_dependency_here\n", "cannot import --impl module"),
        ("raise RuntimeError('boom')\n", "raised on import: RuntimeError: boom"),
        ("import sys\nsys.exit(5)\n", "raised on import: SystemExit: 5"),
        ("def broken(:\n", "raised on import: SyntaxError"),
    ],
)
def test_a_module_that_fails_to_import_gets_one_line(impl, source, needle):
    with pytest.raises(VariantError, match=needle.replace("(", r"\(")) as caught:
        load_impl(impl(source))
    assert "\n" not in str(caught.value)


def test_cli_impl_by_path_and_by_name():
    by_path = run(
        "-m", "reference", "--impl", "notebooks/exercises/my_fix", "--lesson", "failed-resurrect", "--json"
    )
    by_name = run(
        "-m", "reference", "--impl", "reference.hardened", "--json", "--quick"
    )  # --impl: ok everywhere
    assert by_path.returncode == 1, by_path.stderr
    assert json.loads(by_path.stdout)["results"][0]["verdict"] == "bug"
    assert by_name.returncode == 0, by_name.stderr
    assert {r["verdict"] for r in json.loads(by_name.stdout)["results"]} == {"ok"}


@pytest.mark.timeout(180)  # a whole pytest session in a child process
def test_pytest_impl_runs_every_lesson_against_the_module():
    # The deep checks (the simulation, the explorations: 27 of 70, about 5 s each on buggy,
    # shrinking what they find) are deselected here; the quick tier runs each of them through
    # tests/test_impl.py on hardened. What this asks is that `--impl` reaches every check.
    buggy = run("-m", "pytest", "-q", "-p", "no:randomly", "--impl", "reference.buggy", "tests/test_impl.py",
                "-k", "not simulation and not explore")  # fmt: skip
    assert buggy.returncode == 1
    counts = re.search(r"(\d+) failed(?:, (\d+) passed)?, (\d+) deselected in", buggy.stdout)
    assert counts, buggy.stdout
    checks = [c for lesson in LESSONS.values() for c in lesson.checklist("mock") if not c.configuration]
    assert int(counts[1]) + int(counts[2] or 0) == sum(not c.deep for c in checks)
    assert int(counts[3]) == sum(c.deep for c in checks)  # only the lesson checks were collected
    assert int(counts[1]) >= len(LESSONS)  # at least every story fails on the buggy form
    assert "failed-resurrect/story on reference.buggy: bug: 8 of 8 cleared rooms came back" in buggy.stdout


def test_pytest_impl_collects_only_the_checks_and_explorations():
    listed = run("-m", "pytest", "-q", "--collect-only", "--impl", "reference.fixed")
    ids = [line for line in listed.stdout.splitlines() if "::" in line]
    assert ids, listed.stdout + listed.stderr
    assert {i.split("::")[0] for i in ids} == {"tests/test_impl.py", "tests/test_explore_impl.py"}


@pytest.mark.timeout(300)  # a `pytest --impl` run in a child; 60 s cut it on a fresh CI clone
def test_pytest_impl_takes_a_path_after_a_space():
    template = run(
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:randomly",
        "--impl",
        "notebooks/exercises/my_fix",
        "tests/test_impl.py",
        "-k",
        "failed-resurrect",  # the path is what is tested: one lesson's checks are enough
    )
    assert template.returncode == 1, template.stdout + template.stderr  # tests ran and failed, not usage (4)
    assert "failed-resurrect/story on notebooks/exercises/my_fix: bug:" in template.stdout
    missing = run("-m", "pytest", "-q", "--impl", "no_such_module_here")
    assert missing.returncode == 4
    assert missing.stderr.strip() == (
        "ERROR: cannot import --impl module 'no_such_module_here': "
        "ModuleNotFoundError: No module named 'no_such_module_here'"
    )
