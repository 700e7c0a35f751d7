"""A variant module whose import never returns."""

import threading

threading.Event().wait()
