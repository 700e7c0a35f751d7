"""The seams the control plane plugs into: a prefill `KVWriter` and a decode `KVMemory`."""

import json
from dataclasses import dataclass

import pytest

from reference.dataplane.adapters import PlaneWriter, RankMemory
from reference.dataplane.discovery import open_plane
from reference.dataplane.remote import RankProcess
from reference.transport.base import TransportError

ITEM = 64


@dataclass(frozen=True)
class Register:  # the fields of the decode's REGISTER message the writer reads
    plane: str = ""


def test_writer_lands_pages_in_a_decode_rank_and_refuses_stale_ones():
    # The writer runs in-process here, so on the default plane; Mooncake and NIXL engines
    # stay in child processes (importing Mooncake's engine opens a socket for good).
    with RankProcess("default") as decode, open_plane("default") as plane:
        memory = RankMemory(decode, regions=2, pages=8, item_len=ITEM)
        writer, page = PlaneWriter(plane, timeout=0.5), bytes(range(ITEM))
        writer.write(Register(memory.plane), memory.page_ptr(1, 3), page)
        assert memory.read(memory.page_ptr(1, 3), ITEM) == page
        assert memory.read(memory.page_ptr(0, 3), ITEM) == bytes(ITEM)
        memory.zero(1, [3])
        assert memory.read(memory.page_ptr(1, 3), ITEM) == bytes(ITEM)

        with pytest.raises(TransportError, match="REGISTER without a plane field"):
            writer.write(Register(), memory.page_ptr(0, 0), page)
        with pytest.raises(TransportError, match="not one whole page"):
            writer.write(Register(memory.plane), memory.page_ptr(0, 0) + 1, page)
        decode.call("deregister")
        with pytest.raises(TransportError, match="unknown registration"):
            writer.write(Register(memory.plane), memory.page_ptr(0, 0), page)


def test_rank_memory_rejects_pointers_outside_its_pages():
    with RankProcess("default") as decode:
        memory = RankMemory(decode, regions=1, pages=2, item_len=ITEM)
        assert json.loads(memory.plane)["num_pages"] == 2
        with pytest.raises(ValueError, match="not whole pages"):
            memory.read(memory.page_ptr(0, 2), ITEM)
        with pytest.raises(ValueError, match="region 1 outside"):
            memory.region_ptr(1)


def test_register_frames_carry_the_backend_registration_only_when_there_is_one():
    from reference import wire

    plain = wire.Registration("s", "127.0.0.1:1", 0, ITEM)
    over = wire.Registration("s", "127.0.0.1:1", 1 << 40, ITEM, plane='{"backend": "nixl"}')
    assert len(plain.frames()) == 5 and len(over.frames()) == 6
    assert wire.decode(plain.frames()) == plain and wire.decode(over.frames()) == over
