"""Ctrl-C for a process a test starts, as from a terminal, however the test run
itself was started: a shell starts a background job with SIGINT ignored, a
child inherits that, and Python then installs no KeyboardInterrupt handler,
so the child would not see the test's Ctrl-C at all."""

from __future__ import annotations

import signal


def ctrl_c_as_from_a_terminal() -> None:
    """Popen's preexec_fn: SIGINT back to its default action in the child."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
