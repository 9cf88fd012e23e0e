"""A Python with the worker's imports done, that forks `python -m` runs: for a test suite that starts many workers.

`python -m harness_s_worker.zygote --socket PATH` imports what a worker imports (torch, transformers, peft, the
server: about 5 CPU seconds a process) once, then listens on a Unix socket. `bin/python-zygote` stands in for the
venv's python: it sends the zygote its arguments, environment, folder and standard streams (`zygote_stub.py`), the
zygote forks, and the child runs the module as `python -m` would, with those. The launcher stands for the child: it
forwards the signals it gets and exits with the child's status, and a launcher that dies (SIGKILL) takes its child with
it. What a fresh interpreter would do differently is refused, and the launcher then runs the venv's python itself: a run
that is not `-m module`, an environment that differs from the zygote's in a variable the imports read (`IMPORT_READ`).
The child learns the launcher's pid (`LAUNCHER_PID`): the pid its starter knows it by.

The zygote holds no Python thread when it forks (checked once its imports are done: it refuses every run otherwise), and ends
when the process that started it does, killing the children it still has.
"""

from __future__ import annotations

import argparse
import array
import atexit
import gc
import importlib
import json
import os
import random
import runpy
import select
import signal
import socket
import sys
import threading
import traceback
from collections.abc import Callable

#: Where the child finds its launcher's pid.
LAUNCHER_PID = "HARNESS_S_LAUNCHER_PID"
#: Variables read when torch, transformers, tokenizers, the C library or Python itself start: a run whose value differs
#: from the zygote's would not see it, so it runs in a fresh interpreter instead.
IMPORT_READ = (
    "PYTHON",
    "HF_",
    "HUGGINGFACE",
    "TRANSFORMERS",
    "TOKENIZERS",
    "SAFETENSORS",
    "TORCH",
    "PYTORCH",
    "CUDA",
    "OMP_",
    "KMP_",
    "MKL_",
    "OPENBLAS",
    "NUMEXPR",
    "LD_",
    "MALLOC",
    "GLIBC",
)
MAX_REQUEST_BYTES = 1 << 20


def refusal(request: dict[str, object], own_env: dict[str, str]) -> str | None:
    """Why `request` cannot run forked from here (it then runs in a fresh interpreter), or None."""
    argv = request.get("argv")
    if not isinstance(argv, list) or len(argv) < 2 or argv[0] != "-m":
        return "not a `-m module` run"
    env = request.get("env")
    if not isinstance(env, dict):
        return "no environment"
    for name in set(env) | set(own_env):
        if name.startswith(IMPORT_READ) and env.get(name) != own_env.get(name):
            return f"{name} differs from the zygote's"
    return None


def receive(conn: socket.socket) -> tuple[dict[str, object], list[int]]:
    """One request: a JSON object, and the launcher's standard streams passed with it."""
    fds = array.array("i")
    data, ancillary, _flags, _addr = conn.recvmsg(MAX_REQUEST_BYTES, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
    return json.loads(data), list(fds)


def become(request: dict[str, object], fds: list[int], imports_set: dict[str, str]) -> Callable[[], None]:
    """In the forked child: takes the launcher's streams, folder and environment (with what the imports set in it where
    it did not say, as they would have in a fresh interpreter); returns the run."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(str(request["cwd"]))
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in dict(request["env"]).items()})  # type: ignore[call-overload]
    for name, value in imports_set.items():
        os.environ.setdefault(name, value)
    os.environ[LAUNCHER_PID] = str(request["launcher"])
    # A fresh interpreter draws its own seeds: the zygote's would be every child's.
    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    argv = [str(a) for a in list(request["argv"])]  # type: ignore[call-overload]
    sys.path[0] = os.getcwd()

    def run() -> None:
        sys.argv = [argv[1], *argv[2:]]
        try:
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        except SystemExit as stop:
            end(exit_code(stop.code))
        except KeyboardInterrupt:
            traceback.print_exc()
            end(None)
        except BaseException:
            traceback.print_exc()
            end(1)
        end(0)

    return run


def exit_code(code: object) -> int:
    """What `sys.exit(code)` exits with: None is 0, an int itself, anything else printed and 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def end(code: int | None) -> None:
    """Ends the child as the interpreter ends: its threads joined, its exit functions run, its streams flushed; but
    without tearing down every module (in a forked child that writes to each page the zygote's imports filled, copying
    them: seconds of CPU). `None`: killed by SIGINT, as Python ends on an uncaught KeyboardInterrupt."""
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    if code is None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code or 0)


def status_of(status: int) -> dict[str, int]:
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status)}
    return {"exit": os.waitstatus_to_exitcode(status)}


def serve(path: str, own_env: dict[str, str], single_threaded: bool) -> Callable[[], None]:
    """Forks a child per launcher until the process that started this one ends; returns the run in a child.
    `own_env`: the environment the zygote started with, before its imports."""
    imports_set = {k: v for k, v in os.environ.items() if k not in own_env}
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # ends the loop: the children still here are killed
    signal.set_wakeup_fd(wake_w)
    children: dict[int, socket.socket] = {}
    print(f"zygote: forking `python -m` runs at {path}", flush=True)
    try:
        while os.getppid() == parent:
            watched: list[socket.socket | int] = [listener, wake_r, *children.values()]
            ready, _, _ = select.select(watched, [], [], 1.0)
            if wake_r in ready:
                os.read(wake_r, 4096)
            for conn in ready:
                if conn is listener:
                    run = admit(listener, children, (own_env, imports_set), single_threaded, (listener, wake_r, wake_w))
                    if run:
                        return run
                elif isinstance(conn, socket.socket) and not conn.recv(64):
                    # The launcher is gone (killed): its child goes with it.
                    pid = next(p for p, c in children.items() if c is conn)
                    os.kill(pid, signal.SIGKILL)
            reap(children)
    finally:
        if os.getpid() == zygote_pid:
            for pid in children:
                os.kill(pid, signal.SIGKILL)
    sys.exit(0)


def admit(
    listener: socket.socket,
    children: dict[int, socket.socket],
    envs: tuple[dict[str, str], dict[str, str]],
    single_threaded: bool,
    own_fds: tuple[socket.socket, int, int],
) -> Callable[[], None] | None:
    conn, _ = listener.accept()
    try:
        request, fds = receive(conn)
    except (OSError, ValueError):
        conn.close()
        return None
    own_env, imports_set = envs
    why = "the zygote holds threads" if not single_threaded else refusal(request, own_env)
    if why or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        conn.sendall(json.dumps({"refused": why or "no standard streams"}).encode() + b"\n")
        conn.close()
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        own_fds[0].close()
        os.close(own_fds[1])
        os.close(own_fds[2])
        for other in children.values():
            other.close()
        conn.close()
        return become(request, fds, imports_set)
    for fd in fds:
        os.close(fd)
    children[pid] = conn
    conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    return None


def reap(children: dict[int, socket.socket]) -> None:
    """Tells each ended child's launcher its status."""
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is None:
            continue
        try:
            conn.sendall(json.dumps(status_of(status)).encode() + b"\n")
        except OSError:
            pass
        conn.close()


zygote_pid = os.getpid()


def main() -> None:
    ap = argparse.ArgumentParser(prog="harness_s_worker.zygote", description=__doc__.split("\n\n")[0])
    ap.add_argument("--socket", required=True, help="the Unix socket path to listen on")
    ap.add_argument(
        "--imports",
        default="harness_s_worker.server,harness_s_worker.suite_lm_build",
        help="the modules every child shares, imported once here (comma-separated; default: the worker's and the suite LM's build)",
    )
    args = ap.parse_args()
    own_env = dict(os.environ)
    for module in filter(None, args.imports.split(",")):
        importlib.import_module(module)

    global zygote_pid
    zygote_pid = os.getpid()
    # What the imports made is never collected again: a collection in a child would write to its pages.
    gc.freeze()
    # No Python thread: the native pools the imports start (OpenBLAS's) stop at a fork and start again in the child, as
    # they do for a DataLoader's forked workers.
    run = serve(args.socket, own_env, threading.active_count() == 1)
    run()


if __name__ == "__main__":
    main()
