"""Multipart frames between a decode receiver and a prefill rank, in our own encoding.

Upstream's mooncake backend sends, decode PUSH to prefill PULL: a registration of the
decode's KV memory (pointers, item lengths, session id; 18 frames), per-request
metadata (room, kv indices, how many prefill ranks must answer) and ABORT; the prefill
answers on the decode's PULL socket with `[room, status, prefill_rank]`. We keep those
four messages with only the fields the lessons need, each tagged by its first frame,
plus `KV` frames for the bytes-over-ZMQ data plane. `decode` raises `ValueError` on a
malformed message so a listener can drop it instead of dying.

`kv_page` is the deterministic content of one KV page, so the decode side can check
that the bytes that arrived are exactly the ones the prefill sent.
"""

from __future__ import annotations

import hashlib
from array import array
from dataclasses import dataclass

from reference.status import KVPoll

REGISTER, METADATA, ABORT, KV, STATUS = b"REGISTER", b"METADATA", b"ABORT", b"KV", b"STATUS"


def _int(frame: bytes) -> int:
    return int(frame.decode())


@dataclass(frozen=True)
class Registration:
    """Decode to prefill rank: write my KV at `kv_ptr` (pages of `item_len`) via `session`."""

    session: str
    decode_endpoint: str  # ip:port of the decode's PULL socket, where status goes
    kv_ptr: int
    item_len: int
    plane: str = ""  # a real backend's Registration as JSON (reference/dataplane); "" on the default

    def frames(self) -> list[bytes]:
        return [
            REGISTER,
            self.session.encode(),
            self.decode_endpoint.encode(),
            b"%d" % self.kv_ptr,
            b"%d" % self.item_len,
            *([self.plane.encode()] if self.plane else []),
        ]


@dataclass(frozen=True)
class Metadata:
    """Decode to prefill rank: room `room` wants its KV in these decode pages."""

    room: int
    session: str
    decode_endpoint: str  # ip:port where the status goes (upstream sends ip and port)
    kv_indices: tuple[int, ...]
    required_dst_info_num: int = 1

    def frames(self) -> list[bytes]:
        indices = array("i", self.kv_indices).tobytes()
        head = [METADATA, b"%d" % self.room, self.session.encode(), self.decode_endpoint.encode()]
        return [*head, indices, b"%d" % self.required_dst_info_num]


@dataclass(frozen=True)
class Abort:
    room: int
    session: str

    def frames(self) -> list[bytes]:
        return [ABORT, b"%d" % self.room, self.session.encode()]


@dataclass(frozen=True)
class Status:
    """Prefill rank to decode: the room's transfer ended; `digest` is sha256 of what it sent."""

    room: int
    status: KVPoll
    prefill_rank: int
    digest: bytes = b""

    def frames(self) -> list[bytes]:
        return [STATUS, b"%d" % self.room, b"%d" % self.status, b"%d" % self.prefill_rank, self.digest]


@dataclass(frozen=True)
class KVWrite:
    """Bytes-over-ZMQ data plane: write `data` at `ptr` of the decode's registered memory."""

    ptr: int
    data: bytes

    def frames(self) -> list[bytes]:
        return [KV, b"%d" % self.ptr, self.data]


Message = Registration | Metadata | Abort | Status | KVWrite


def decode(frames: list[bytes]) -> Message:
    """Parse one message; ValueError (one line) when it is malformed."""
    try:
        return _decode(frames)
    except (ValueError, IndexError, UnicodeDecodeError) as exc:
        raise ValueError(f"malformed message {frames[:1]!r}: {exc}") from None


def _decode(f: list[bytes]) -> Message:
    tag = f[0] if f else b""
    if tag == REGISTER and len(f) in (5, 6):
        plane = f[5].decode() if len(f) == 6 else ""
        return Registration(f[1].decode(), f[2].decode(), _int(f[3]), _int(f[4]), plane)
    if tag == METADATA and len(f) == 6:
        indices = tuple(array("i", f[4]))
        return Metadata(_int(f[1]), f[2].decode(), f[3].decode(), indices, _int(f[5]))
    if tag == ABORT and len(f) == 3:
        return Abort(_int(f[1]), f[2].decode())
    if tag == STATUS and len(f) == 5:
        return Status(_int(f[1]), KVPoll(_int(f[2])), _int(f[3]), f[4])
    if tag == KV and len(f) == 3:
        return KVWrite(_int(f[1]), f[2])
    raise ValueError(f"unknown tag or frame count ({len(f)} frames)")


def kv_page(room: int, prefill_rank: int, page: int, item_len: int) -> bytes:
    """The KV bytes prefill rank `prefill_rank` holds for page `page` of room `room`."""
    seed = hashlib.blake2b(b"%d/%d/%d" % (room, prefill_rank, page), digest_size=32).digest()
    return (seed * (item_len // 32 + 1))[:item_len]


def kv_digest(chunks: list[bytes]) -> bytes:
    return hashlib.sha256(b"".join(chunks)).digest()
