"""Source trees made from an sglang wheel, with hand edits to upstream's code.

`--sglang TREE` takes an installed-package layout (`TREE/sglang/srt/disaggregation/...`,
`TREE/sglang/_version.py`); `make_tree(wheel, dest, edits)` writes one from a wheel's
disaggregation package and applies each `Edit`: an exact text that must occur exactly
once in that file, and its replacement. Nothing of upstream's is kept in this
repository: the edits name a few lines each, the rest is read from the wheel when the
tree is made.

`AUDIT` holds the edits of the issue that asked for this (an audit made trees from the
0.5.19 wheel and edited upstream's code by hand): what each one breaks, the lesson that
must see it, and the verdict that lesson must give. The first four break a fix's
mechanism in a way only upstream's own surrounding code can show (the send error
upstream's `except` sees, its registration path, its `abort()`, its heartbeat); the
last is a correct edit that only upstream's own status values keep correct.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

from reference.upstream.errors import UpstreamError

PACKAGE = "sglang/"
DISAGG = "sglang/srt/disaggregation/"


@dataclass(frozen=True)
class Edit:
    file: str  # relative to sglang/srt/disaggregation/
    old: str  # must occur exactly once
    new: str


@dataclass(frozen=True)
class AuditTree:
    name: str
    what: str
    lesson: str
    verdict: str  # what the lesson must give on this tree
    edits: tuple[Edit, ...]


def make_tree(wheel: Path, dest: Path, edits: tuple[Edit, ...] = ()) -> Path:
    """Write the wheel's disaggregation package and version file under `dest`, apply
    `edits`, return `dest` (pass it as `--sglang dest`)."""
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.endswith(".py") and (name.startswith(DISAGG) or name == f"{PACKAGE}_version.py"):
                target = dest / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(name))
    for edit in edits:
        apply(dest, edit)
    return dest


def apply(dest: Path, edit: Edit) -> None:
    path = dest / DISAGG / edit.file
    text = path.read_text(encoding="utf-8")
    count = text.count(edit.old)
    if count != 1:
        raise UpstreamError(
            f"edit of {edit.file}: its text occurs {count} times, not once: {edit.old[:60]!r}"
        )
    path.write_text(text.replace(edit.old, edit.new), encoding="utf-8")


_SEND_FAILED = (
    "                self.kv_mgr.record_failure(\n"
    "                    self.bootstrap_room,\n"
    '                    f"send_metadata to prefill'
)

AUDIT: tuple[AuditTree, ...] = (
    AuditTree(
        "send-error-not-invalidated",
        "send_metadata invalidates on a ZMQ error only when the connect failed, not the send",
        "stale-bootstrap",
        "bug",
        (
            Edit(
                "mooncake/conn.py",
                """                sock, lock = self._connect_to_bootstrap_server(bootstrap_info)
                with lock:
                    sock.send_multipart(
                        [
                            str(self.bootstrap_room).encode("ascii"),""",
                """                sock, lock = self._connect_to_bootstrap_server(bootstrap_info)
            except zmq.ZMQError:
                self.invalidate_cached_bootstrap_infos()
                self.conclude_state = KVPoll.Failed
                self.kv_mgr.update_status(self.bootstrap_room, KVPoll.Failed)
                return
            try:
                with lock:
                    sock.send_multipart(
                        [
                            str(self.bootstrap_room).encode("ascii"),""",
            ),
            Edit(
                "mooncake/conn.py",
                f"""            except zmq.ZMQError:
                self.invalidate_cached_bootstrap_infos()
{_SEND_FAILED}""",
                f"""            except zmq.ZMQError:
{_SEND_FAILED}""",
            ),
        ),
    ),
    AuditTree(
        "registration-failure-not-invalidated",
        "_setup_bootstrap_infos returns on a failed _register_kv_args without invalidating",
        "stale-bootstrap",
        "bug",
        (
            Edit(
                "common/conn.py",
                """                if not self._register_kv_args():
                    self.invalidate_cached_bootstrap_infos()
                    return""",
                """                if not self._register_kv_args():
                    return""",
            ),
        ),
    ),
    AuditTree(
        "abort-writes-status-directly",
        "CommonKVReceiver.abort() writes request_status directly instead of through update_status",
        "failed-resurrect",
        "bug",
        (
            Edit(
                "common/conn.py",
                """        self.kv_mgr.update_status(self.bootstrap_room, KVPoll.Failed)
        self.conclude_state = KVPoll.Failed
        if (
            not self.abort_notified""",
                """        self.kv_mgr.request_status[self.bootstrap_room] = KVPoll.Failed
        self.conclude_state = KVPoll.Failed
        if (
            not self.abort_notified""",
            ),
        ),
    ),
    AuditTree(
        "heartbeat-never-fails-the-node",
        "upstream's heartbeat loop never calls _handle_node_failure",
        "live-set-race",
        "bug",
        (
            Edit(
                "common/conn.py",
                """                        self._handle_node_failure(bootstrap_addr)
                        with self.session_pool_lock:""",
                """                        pass
                        with self.session_pool_lock:""",
            ),
        ),
    ),
    AuditTree(
        "failed-by-identity",
        "update_status tests `status is KVPoll.Failed` (correct: upstream's statuses are plain ints)",
        "failed-resurrect",
        "ok",
        (
            Edit(
                "common/conn.py",
                """            if status == KVPoll.Failed:
                return""",
                """            if status is KVPoll.Failed:
                return""",
            ),
        ),
    ),
)

_HELD = "            cleanup_task = self._loop.create_task(self._cleanup_expired_entries())"

# Hand-written reverts of each PR's hunk in 0.5.19 (each must be `bug`, or `latent`
# where that release's own wiring would not trigger the reverted defect).
REVERTS: tuple[AuditTree, ...] = (
    AuditTree(
        "revert-24539",
        "#24539: update_status stores a Failed for an absent room again",
        "failed-resurrect",
        "bug",
        (Edit("common/conn.py", """            if status == KVPoll.Failed:
                return
            self.request_status[bootstrap_room] = status""",
              """            self.request_status[bootstrap_room] = status"""),),
    ),
    AuditTree(
        "revert-36351",
        "#36351: _handle_node_failure iterates the live tracker set, taken outside the lock",
        "live-set-race",
        "bug",
        (Edit("common/conn.py", """            possible_affected_rooms = list(
                self.addr_to_rooms_tracker.get(failed_bootstrap_addr, [])
            )
            self.addr_to_rooms_tracker.pop(failed_bootstrap_addr, None)
""", ""),
         Edit("common/conn.py", """        affected_rooms = []
        for room in possible_affected_rooms:""",
              """        possible_affected_rooms = self.addr_to_rooms_tracker.get(failed_bootstrap_addr, [])
        affected_rooms = []
        for room in possible_affected_rooms:""")),
    ),
    AuditTree(
        "revert-36029-timeout",
        "#36029: the waiting timeout fails the request but keeps the cached entry",
        "stale-bootstrap",
        "bug",
        (Edit("common/conn.py", """        self.kv_mgr.update_status(self.bootstrap_room, KVPoll.Failed)
        self.invalidate_cached_bootstrap_infos()
        if (""", """        self.kv_mgr.update_status(self.bootstrap_room, KVPoll.Failed)
        if ("""),),
    ),
    AuditTree(
        "revert-33048",
        "#33048: the bootstrap server's cleanup task is a bare create_task again",
        "task-refs",
        "latent",
        (Edit("common/conn.py", _HELD + """
            self._background_tasks.add(cleanup_task)
            cleanup_task.add_done_callback(self._background_tasks.discard)""",
              """            self._loop.create_task(self._cleanup_expired_entries())"""),),
    ),
)  # fmt: skip
