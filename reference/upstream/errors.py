"""Errors of the upstream adapter, each a one-line message for the user."""

from reference.variants import VariantError


class UpstreamError(VariantError):
    """PATH is not a usable sglang, or its modules could not be loaded."""


class NoStandIn(RuntimeError):
    """Upstream code reached an sglang facility the adapter has no stand-in for.

    Raised when the call happens (not at import), so a version whose import list grew
    still loads, and a scenario that really needs the facility says `unknown` naming it.
    """
