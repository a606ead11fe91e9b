"""A ``preload`` module whose import never finishes; it records the importing process's pid in
the file named by ``FXSCOPE_TEST_PIDFILE`` (if set) so tests can watch that process."""

import os
import time

_pidfile = os.environ.get("FXSCOPE_TEST_PIDFILE")
if _pidfile:
    with open(_pidfile, "w") as _fh:
        _fh.write(str(os.getpid()))

while True:
    time.sleep(0.1)
