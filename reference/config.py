"""Tunables of the components, as frozen dataclasses with upstream's defaults.

Upstream reads these from `SGLANG_DISAGGREGATION_*` environment variables (and clamps
the heartbeat interval to at least 2 s). We take them as arguments so that scenarios
can shrink them; with a `VirtualClock` the defaults cost no wall time anyway.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class ManagerConfig:
    heartbeat_interval: float = 5.0  # SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL
    heartbeat_max_failures: int = 2  # SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE
    waiting_timeout: float = 300.0  # SGLANG_DISAGGREGATION_WAITING_TIMEOUT
    bootstrap_timeout: float = 300.0  # SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT
    # The decode rank's own layout, checked against the prefill's by try_ensure_parallel_info.
    attn_tp_size: int = 1
    attn_tp_rank: int = 0
    page_size: int = 1
    kv_cache_dtype: str = "auto"

    def __post_init__(self) -> None:
        if self.heartbeat_interval <= 0:
            raise ValueError("heartbeat_interval must be positive")
        if self.heartbeat_max_failures < 1:
            raise ValueError("heartbeat_max_failures must be at least 1")
        if not 0 <= self.attn_tp_rank < self.attn_tp_size:
            raise ValueError("attn_tp_rank must be in 0..attn_tp_size-1")
