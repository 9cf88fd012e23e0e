"""The policy worker's command line: `python -m harness_s_worker.launch --model tiny --port 8765`.

Its arguments are checked here, before torch is imported (a few seconds of CPU): a port in use or
a model folder that does not exist is said at once, exit 2 and one line; only then does
`server.serve` load the model and serve it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from .heap import keep_freed_memory
from .limits import Limits
from .names import CHAT_PROMPTS
from .toolcalls import PARSERS


def port_free(host: str, port: int) -> bool:
    """Whether `host:port` can be bound now (checked before the model loads, so a port in use is
    said at once, not after the model is loaded and the server fails to bind)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a port in TIME_WAIT is free
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def watch_parent(parent: int, before_exit: Callable[[], None]) -> None:
    """Exits this process once its parent is gone (it is then re-parented, so its parent id changes),
    calling `before_exit` first."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        before_exit()
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="harness_s_worker", description="Harness-S reference policy worker (protocol v2)")
    ap.add_argument(
        "--model", default="tiny", help="a Hugging Face model directory, or 'tiny' (built offline for tests)"
    )
    ap.add_argument(
        "--served-model-name",
        default=None,
        help="the name the model is served under: policies name it as their base_model and /healthz reports it (default: the model folder's name, or tiny)",
    )
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument(
        "--token",
        default=os.environ.get("HARNESS_S_WORKER_TOKEN"),
        help="bearer token every request but /healthz must carry (default $HARNESS_S_WORKER_TOKEN)",
    )
    ap.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="where adapters and checkpoints live (default: a fresh temp folder, removed when the worker exits)",
    )
    ap.add_argument("--device", default=None, help="cuda, cpu, … (default: cuda when torch sees one, else cpu)")
    ap.add_argument("--max-policies", type=int, default=Limits.policies, help="policies held at once (429 past it)")
    ap.add_argument(
        "--max-episodes", type=int, default=Limits.episodes_per_policy, help="open episodes per policy (429 past it)"
    )
    ap.add_argument("--max-body-mb", type=int, default=64, help="largest request body (413 past it)")
    ap.add_argument(
        "--kv-cache-mb",
        type=int,
        default=Limits.cache_mb,
        help="memory for the open episodes' KV caches (least recently used evicted first, then re-pre-filled)",
    )
    ap.add_argument(
        "--sample-timeout-s",
        type=float,
        default=Limits.sample_timeout_s,
        help="longest a sample may wait and run (503 SAMPLE_TIMEOUT past it)",
    )
    ap.add_argument(
        "--tool-parser",
        choices=PARSERS,
        default=None,
        help="the tool-call format the model writes (default: read from its chat template)",
    )
    ap.add_argument(
        "--chat-template",
        type=Path,
        default=None,
        help="a Jinja chat template file used instead of the model's own (as vLLM's and SGLang's --chat-template)",
    )
    ap.add_argument(
        "--chat-prompts",
        choices=CHAT_PROMPTS,
        default="episode",
        help="how /v1/chat/completions builds a prompt: 'episode' continues the episode a conversation came from (the ids training holds); 'render' renders every request's messages whole, as vLLM and SGLang do",
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="CPU threads for torch (default: 1 for a model under 20M parameters on CPU, where more threads only add overhead; torch's own default otherwise)",
    )
    ap.add_argument(
        "--release-freed-memory",
        action="store_true",
        help="give large freed blocks back to the system at once, as the C library does by default (a smaller resident size; on CPU, more time faulting memory back in)",
    )
    ap.add_argument(
        "--exit-with-parent",
        action="store_true",
        help="exit when the process that started this one dies (a CLI killed mid-run leaves no worker behind)",
    )
    return ap


def main() -> None:
    ap = parser()
    args = ap.parse_args()
    # A temp folder of its own is removed when the worker ends: no later worker can find it.
    owned = None if args.state_dir else Path(tempfile.mkdtemp(prefix="harness-s-worker-"))
    args.state_dir = args.state_dir or owned

    def remove_owned() -> None:
        if owned:
            shutil.rmtree(owned, ignore_errors=True)

    def remove_owned_then_die(signum: int, _frame: object) -> None:
        # uvicorn restores this handler after its graceful shutdown and raises the signal again
        remove_owned()
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)

    signal.signal(signal.SIGTERM, remove_owned_then_die)
    if args.exit_with_parent:
        watch_parent(os.getppid(), remove_owned)
    try:
        checked_serve(ap, args)
    finally:
        remove_owned()


def checked_serve(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    # The sampler thread runs Python between kernels; a shorter switch interval lets the HTTP
    # loop take requests in between instead of waiting 5 ms for the interpreter each time.
    sys.setswitchinterval(0.0005)
    if not 0 <= args.port <= 65535:
        ap.error(f"--port {args.port}: a port is 0-65535")
    if args.model != "tiny" and not Path(args.model).is_dir():
        ap.error(f"--model {args.model}: no such folder (a Hugging Face model directory, or tiny)")
    if args.chat_template is not None and not args.chat_template.is_file():
        ap.error(f"--chat-template {args.chat_template}: no such file")
    if args.port and not port_free(args.host, args.port):
        ap.error(f"--port {args.port}: {args.host}:{args.port} is in use by another process")
    if not args.release_freed_memory:
        keep_freed_memory()
    from .server import serve  # torch and the model: only once the arguments hold

    serve(args, ap)


if __name__ == "__main__":
    main()
