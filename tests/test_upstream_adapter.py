"""The upstream adapter's mechanics: the three kinds of PATH, one-line errors, and a
load that leaves `sys.modules` as it found it."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from upstream_wheels import wheel

from reference.cli import exit_code
from reference.clock import VirtualClock
from reference.config import ManagerConfig
from reference.harness.result import Result
from reference.lessons import LESSONS, Options, run_lesson
from reference.status import KVPoll
from reference.transport.mock import MockNetwork
from reference.upstream import expectations, load_sglang
from reference.upstream.errors import UpstreamError
from reference.upstream.source import open_source
from reference.upstream.standins import StandIn

ROOT = Path(__file__).resolve().parents[1]
CONN = "sglang/srt/disaggregation/{}/conn.py"


def extract(whl: Path, into: Path, keep_version: bool = True) -> None:
    """Unpack only what the adapter reads (disaggregation files, `_version.py`)."""
    with zipfile.ZipFile(whl) as archive:
        for name in archive.namelist():
            wanted = name.startswith("sglang/srt/disaggregation/")
            if wanted or (keep_version and name == "sglang/_version.py"):
                archive.extract(name, into)


def test_a_load_leaves_sys_modules_alone():
    before = {name for name in sys.modules if name.split(".")[0] in ("sglang", "torch")}
    variant = load_sglang(str(wheel("0.5.18")))
    after = {name for name in sys.modules if name.split(".")[0] in ("sglang", "torch")}
    assert before == after
    assert not [name for name, mod in sys.modules.items() if isinstance(mod, StandIn)]
    assert [c.__name__ for c in variant.module.KVManager.__mro__[2:4]] == [
        "MooncakeKVManager",
        "CommonKVManager",
    ]


def test_versions_load_side_by_side():
    old, new = load_sglang(str(wheel("0.5.18"))), load_sglang(str(wheel("0.5.19")))
    assert old.module.KVManager is not new.module.KVManager
    assert (old.name, new.name) == ("sglang-0.5.18", "sglang-0.5.19")
    assert old.expected_for("live-set-race") == "latent" and new.expected_for("live-set-race") == "ok"


@pytest.mark.parametrize("layout", ["site-packages", "package", "checkout"])
def test_installed_and_source_tree_layouts(tmp_path, layout):
    if layout == "checkout":  # a git checkout: python/sglang/..., no generated _version.py
        extract(wheel("0.5.18"), tmp_path / "python", keep_version=False)
        path, label = tmp_path, "sglang-tree"
    else:
        extract(wheel("0.5.18"), tmp_path)
        path, label = (tmp_path if layout == "site-packages" else tmp_path / "sglang"), "sglang-0.5.18"
    variant = load_sglang(str(path))
    assert variant.name == label
    result = run_lesson(LESSONS["live-set-race"], variant, Options())
    assert result.verdict == "latent" and "Set changed size during iteration" in result.symptom


FIXES = ("failed-resurrect", "stale-bootstrap", "live-set-race", "task-refs")


def test_expectations_follow_upstream_history():
    assert expectations("0.5.11") == {
        "failed-resurrect": "bug", "stale-bootstrap": "bug", "live-set-race": "latent", "task-refs": "latent",
        "restart-recovery": "bug", "room-reuse": "bug", "failure-records": "bug",
        "supervised-loops": "unknown", "stale-tracker": "latent",
        "late-kv-write": "bug", "bootstrap-partition": "bug",  # found on netns, open everywhere
    }  # fmt: skip
    provoked = expectations("0.5.11", provoke=True)
    assert provoked.pop("supervised-loops") == "unknown" and set(provoked.values()) == {"bug"}
    assert expectations("0.5.18")["failed-resurrect"] == "ok"
    assert expectations("0.5.18")["stale-bootstrap"] == "bug"
    assert {expectations("0.5.19.dev4+gabc")[lesson] for lesson in FIXES} == {"ok"}
    assert expectations("0.5.19.dev4+gabc")["stale-tracker"] == "bug"  # mori: cleanup and heartbeat
    assert expectations("0.5.20")["stale-tracker"] == "ok"  # mori's cleanup is gone
    assert expectations(None) == expectations("0.5.23")  # a checkout: the newest rows
    assert {lesson for lesson, e in expectations(None).items() if e != "ok"} == {
        "restart-recovery", "room-reuse", "supervised-loops", "late-kv-write", "bootstrap-partition",
        "failure-records",  # 0.5.23 guards abort() after Failed, not after Success
    }  # fmt: skip


def test_an_expected_unknown_exits_0_an_unexpected_one_2():
    """A release without a lesson's component is expected `unknown` ("not present in ...")."""

    def result(lesson: str, expected: str, symptom: str) -> Result:
        return Result(lesson, "sglang-0.5.11", "mock", "unknown", expected, symptom)  # type: ignore[arg-type]

    absent = "not present in sglang-0.5.11: DPDispatcher"
    assert exit_code([result("supervised-loops", "unknown", absent)]) == 0
    assert exit_code([result("supervised-loops", "unknown", "hit its time bound")]) == 2
    assert exit_code([result("room-reuse", "bug", absent)]) == 2


def _file(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _fake_tree(root: Path, common: str) -> Path:
    for part, text in (("base", ""), ("common", common)):
        file = root / CONN.format(part)
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text)
    return root


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda d: d / "missing", "no such file or directory"),
        (lambda d: _file(d / "x.txt", ""), "a file must be an sglang wheel"),
        (lambda d: _file(d / "x.whl", "junk"), "cannot read wheel"),
        (lambda d: d, "no sglang/srt/disaggregation/common/conn.py under it"),
    ],
)
def test_bad_paths_get_one_line(tmp_path, make, needle):
    with pytest.raises(UpstreamError) as caught:
        load_sglang(str(make(tmp_path)))
    assert needle in str(caught.value) and "\n" not in str(caught.value)


def test_a_tree_without_the_manager_class_says_so(tmp_path):
    variant = load_sglang(str(_fake_tree(tmp_path, "X = 1\n")))
    result = run_lesson(LESSONS["failed-resurrect"], variant, Options())
    assert result.verdict == "unknown"
    assert result.symptom == "not present in sglang-tree: CommonKVManager"


def test_a_file_that_does_not_parse_says_so(tmp_path):
    variant = load_sglang(str(_fake_tree(tmp_path, "class CommonKVManager:\n    def broken(:\n")))
    assert (
        "sglang/srt/disaggregation/common/conn.py does not parse here"
        in variant.module.UNAVAILABLE["KVManager"]
    )


def test_a_statement_that_cannot_run_here_is_skipped_and_named(tmp_path):
    """A raising top-level statement (a native call at import) does not stop the load;
    a class whose own statement failed is reported with that statement's line."""
    common = (
        "import not_installed_anywhere\n"
        "not_installed_anywhere.start_engine()\n"
        "class CommonKVManager(not_installed_anywhere.Base(), metaclass=1):\n    pass\n"
    )
    variant = load_sglang(str(_fake_tree(tmp_path, common)))
    reason = variant.module.UNAVAILABLE["KVManager"]
    assert reason.startswith("sglang-tree: sglang/srt/disaggregation/common/conn.py: CommonKVManager")
    assert "could not be defined: line 3: NoStandIn: no stand-in for not_installed_anywhere.Base" in reason
    assert variant.module.LOAD.skipped["srt/disaggregation/common/conn.py"][0][0] == 2


def test_the_source_reads_only_disaggregation_files():
    source = open_source(str(wheel("0.5.19")))
    assert source.version == "0.5.19"
    assert source.has("srt/disaggregation/encoder/runtime.py") and not source.has("srt/server_args.py")


def test_cli_bad_sglang_path_is_one_line():
    proc = subprocess.run(
        [sys.executable, "-m", "reference", "--sglang", "/no/such/sglang"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr == "python -m reference: error: --sglang /no/such/sglang: no such file or directory\n"


@pytest.mark.parametrize("version", ["0.5.18", "0.5.19"])
def test_adapter_heartbeat_drives_upstream_node_failure(version):
    """The adapter's heartbeat loop, on the virtual clock, calls upstream's
    `_handle_node_failure` after `max_failures` misses; upstream spares Success rooms,
    drops the prefill's pool entries and writes its own failure reason."""
    addr, net, clock = "10.0.0.9:8998", MockNetwork(), VirtualClock()
    manager = load_sglang(str(wheel(version))).module.KVManager(
        net, ManagerConfig(heartbeat_interval=2.0, heartbeat_max_failures=3), clock
    )
    net.add_prefill(addr)
    manager.add_prefill(addr)
    manager.connection_pool[f"{addr}_0_0_0"] = [{"rank_ip": "127.0.0.1", "rank_port": 5001}]
    for room in (1, 2):
        manager.track_room(addr, room)
    manager.update_status(2, KVPoll.Success)
    manager.start_heartbeat()
    try:
        clock.wait_for_sleepers(1)
        net.kill(addr)
        clock.advance(4.0)
        assert manager.check_status(1) == KVPoll.Bootstrapping, "two misses are not yet a failure"
        clock.advance(2.0)
        assert manager.request_status == {1: KVPoll.Failed, 2: KVPoll.Success}
        assert manager.connection_pool == {} and addr not in manager.addr_to_rooms_tracker
        assert manager.failure_records[1].startswith("Lost connection with prefill instance")
        assert manager.heartbeat_alive
    finally:
        manager.close()
