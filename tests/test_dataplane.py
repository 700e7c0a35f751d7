"""Each KV transfer backend across two OS processes on 127.0.0.1: bytes land, stale writes do not.

A receiver rank registers its KV buffer and hands the registration to a writer rank,
as a decode rank does with each prefill rank. 1 MiB must land intact (checked by
sha256 on both sides). After the receiver restarts, a write through its old
registration must fail and leave the new buffer untouched; only the fresh
registration makes the next write land. Backends that are not installed are skipped
with their reason; `--backend NAME` narrows the run, `--device cuda` uses GPU memory.
"""

import pytest

from reference.dataplane import BackendUnavailable
from reference.dataplane.remote import RankProcess

PAGES, PAGE = 256, 4096  # 1 MiB
ALL = list(range(PAGES))
STALE_TIMEOUT = 0.5  # seconds a write to a dead peer may take before it counts as failed


def rank(backend: str, device: str) -> RankProcess:
    """A rank process; skipped when this build of the backend cannot use that memory."""
    try:
        return RankProcess(backend, device)
    except BackendUnavailable as exc:
        pytest.skip(f"{backend} on {device}: {exc}")


def test_one_mib_lands_intact(backend, device):
    with rank(backend, device) as receiver, rank(backend, device) as writer:
        receiver.allocate(PAGES, PAGE)
        writer.allocate(PAGES, PAGE)
        registration = receiver.register()
        sent = writer.fill(seed=1)
        result = writer.write(registration, ALL, ALL)
        assert (result.ok, result.nbytes, result.error) == (True, PAGES * PAGE, "")
        assert receiver.checksum() == sent

        writer.fill(seed=2)  # scattered pages land where the page lists say
        src, dst = [0, 1, 2, 200], [7, 8, 9, 3]
        assert writer.write(registration, src, dst).ok
        assert receiver.checksum(dst) == writer.checksum(src)
        assert receiver.checksum([4, 5, 6]) != writer.checksum([4, 5, 6])  # others kept seed 1


def test_stale_registration_after_restart_fails_and_fresh_one_lands(backend, device):
    with rank(backend, device) as writer:
        writer.allocate(PAGES, PAGE)
        sent = writer.fill(seed=3)
        with rank(backend, device) as before_restart:
            before_restart.allocate(PAGES, PAGE)
            stale = before_restart.register()
        with rank(backend, device) as restarted:
            restarted.allocate(PAGES, PAGE)
            untouched = restarted.checksum()
            fresh = restarted.register()

            result = writer.write(stale, ALL, ALL, timeout=STALE_TIMEOUT)
            assert not result.ok and result.nbytes == 0 and result.error
            assert restarted.checksum() == untouched

            assert writer.write(fresh, ALL, ALL).ok
            assert restarted.checksum() == sent


def test_deregistered_buffer_refuses_writes(backend, device):
    if backend == "nixl":
        pytest.xfail("NIXL over UCX on CPU: a write through a deregistered region still lands")
    with rank(backend, device) as receiver, rank(backend, device) as writer:
        receiver.allocate(4, PAGE)
        writer.allocate(4, PAGE)
        registration = receiver.register()
        untouched = receiver.checksum()
        writer.fill(seed=4)
        receiver.call("deregister")
        result = writer.write(registration, [0], [0], timeout=STALE_TIMEOUT)
        assert not result.ok, "a write through a deregistered buffer landed"
        assert receiver.checksum() == untouched
