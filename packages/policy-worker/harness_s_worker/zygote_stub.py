"""The launcher `bin/python-zygote` runs: a `python -m module args` run forked from the zygote that
HARNESS_S_PYTHON_ZYGOTE names (harness_s_worker/zygote.py), else, or when the zygote refuses it, the venv's python
itself (exec: the same process). Run as a script, never imported: it loads nothing but the standard library.

While the child runs, this process stands for it: the signals it gets go to the child, it exits with the child's
status (killed by the child's signal), and with `--exit-with-parent` among the arguments it ends the child (SIGTERM)
when its own parent is gone, as the worker itself would.
"""

from __future__ import annotations

import array
import json
import os
import signal
import socket
import sys
from collections.abc import Callable

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


class Launcher:
    """One run: its connection to the zygote, what it has read there, and the signals it got before the child was
    there to take them."""

    def __init__(self) -> None:
        self.conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.buffer = b""
        self.child: int | None = None
        self.pending: list[int] = []
        for sig in FORWARDED:
            signal.signal(sig, self.forward)

    def forward(self, signum: int, _frame: object) -> None:
        if self.child is None:
            self.pending.append(signum)
        else:
            os.kill(self.child, signum)

    def line(self, on_idle: Callable[[], None] = lambda: None) -> dict[str, object]:
        """The zygote's next line, read whole; {} when it closed the connection first."""
        while b"\n" not in self.buffer:
            try:
                chunk = self.conn.recv(4096)
            except TimeoutError:
                on_idle()
                continue
            except InterruptedError:
                continue
            if not chunk:
                return {}
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return dict(json.loads(line))

    def start(self, path: str) -> bool:
        """Asks the zygote to fork this run: False when it is not there or refuses it."""
        try:
            self.conn.connect(path)
            request = {"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd(), "launcher": os.getpid()}
            streams = array.array("i", [0, 1, 2])
            self.conn.sendmsg([json.dumps(request).encode()], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, streams)])
            reply = self.line()
        except (OSError, ValueError):
            return False
        if "pid" not in reply:
            return False
        self.child = int(str(reply["pid"]))
        for signum in self.pending:
            os.kill(self.child, signum)
        return True

    def stand_for_child(self) -> None:
        """Waits for the child's status; exits as it did."""
        parent = os.getppid() if "--exit-with-parent" in sys.argv else None

        def parent_check() -> None:
            nonlocal parent
            if parent is not None and os.getppid() != parent and self.child is not None:
                os.kill(self.child, signal.SIGTERM)
                parent = None

        self.conn.settimeout(1.0)
        status = self.line(parent_check)
        if not status:
            print("python-zygote: the zygote ended before its child", file=sys.stderr)
            sys.exit(1)
        if "signal" in status:
            signum = int(str(status["signal"]))
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        sys.exit(int(str(status.get("exit", 1))))


def main() -> None:
    path = os.environ.get("HARNESS_S_PYTHON_ZYGOTE")
    launcher = Launcher()
    if path and launcher.start(path):
        launcher.stand_for_child()
    launcher.conn.close()
    for sig in FORWARDED:
        signal.signal(sig, signal.SIG_DFL)
    if launcher.pending:  # a signal came before any child: as it would have to the fresh interpreter
        os.kill(os.getpid(), launcher.pending[0])
    os.execv(sys.executable, [sys.executable, *sys.argv[1:]])


if __name__ == "__main__":
    main()
