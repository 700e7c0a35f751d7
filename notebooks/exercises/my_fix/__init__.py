"""Your variant: a copy of the buggy components, with the fixes left as exercises.

Check it with `python -m reference --impl notebooks.exercises.my_fix` (or
`pytest --impl notebooks.exercises.my_fix`): every lesson is expected `ok` once you fixed it.
Each `EXERCISE(<lesson>)` comment marks where the upstream bug is; the lesson's
symptom tells you whether your fix holds. The answers are in reference/fixed/.
"""

from .bootstrap_server import BootstrapServer
from .dispatcher import DPDispatcher
from .manager import KVManager
from .receiver import KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
