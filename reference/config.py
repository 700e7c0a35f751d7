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


@dataclass(frozen=True)
class DispatcherConfig:
    """The DP dispatcher's tunables (upstream `SGLANG_ENCODER_*`), in loop seconds."""

    req_timeout: float = 180.0  # SGLANG_ENCODER_REQ_TIMEOUT: bound on one encode
    send_timeout: float = 180.0  # SGLANG_ENCODER_SEND_TIMEOUT: ttl of a mapping awaiting /send
    listener_max_errors: int = 30  # consecutive receive errors before the listener gives up

    def __post_init__(self) -> None:
        if self.req_timeout <= 0 or self.send_timeout <= 0:
            raise ValueError("timeouts must be positive")
        if self.listener_max_errors < 1:
            raise ValueError("listener_max_errors must be at least 1")

    @property
    def cleanup_interval(self) -> float:
        """How often the stale-mapping sweep runs: max(ttl / 4, 30 s), as upstream."""
        return max(self.send_timeout / 4, 30.0)
