"""The data plane's errors, each carrying a one-line message meant for the user."""


class BackendUnavailable(RuntimeError):
    """A backend cannot be used here; the message names what is missing."""


class DeviceUnavailable(BackendUnavailable):
    """The memory asked for does not exist here (a CUDA device without a GPU)."""


class TransferFailed(RuntimeError):
    """The backend reported that a write did not complete."""
