"""Messages exchanged between decode, prefill and the bootstrap server.

Frozen dataclasses in our own words for upstream's dicts and multipart frames. The
bootstrap server answers `GET /route` with a `RankInfo` per rank, or with the whole
`PrefillServerInfo` when every rank parameter is -1.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class RankInfo:
    """Where one prefill rank's PULL socket listens (`{rank_ip, rank_port}`)."""

    rank_ip: str
    rank_port: int

    @property
    def endpoint(self) -> str:
        return f"tcp://{self.rank_ip}:{self.rank_port}"


@dataclass(frozen=True)
class PrefillServerInfo:
    """The prefill's parallel layout, fetched once per bootstrap address."""

    attn_tp_size: int = 1
    attn_cp_size: int = 1
    dp_size: int = 1
    pp_size: int = 1
    page_size: int = 1
    kv_cache_dtype: str = "auto"
