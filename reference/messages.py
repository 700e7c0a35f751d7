"""Messages exchanged between decode, prefill and the bootstrap server.

Frozen dataclasses in our own words for upstream's dicts and multipart frames. The
bootstrap server answers `GET /route` with `{rank_ip, rank_port}` for one rank, or with
the whole `PrefillServerInfo` when every rank parameter is -1.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class PrefillServerInfo:
    """The prefill's parallel layout, fetched once per bootstrap address."""

    attn_tp_size: int = 1
    attn_cp_size: int = 1
    dp_size: int = 1
    pp_size: int = 1
    page_size: int = 1
    kv_cache_dtype: str = "auto"
