"""The zygote (harness_s_worker/zygote.py) and its launcher (bin/python-zygote): a `-m` run forked from it behaves to
its starter as the venv's python running it would (streams, folder, arguments, status, signals), and what it cannot run
as a fresh interpreter would runs in one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

LAUNCHER = Path(__file__).resolve().parents[1] / "bin" / "python-zygote"
PROBE = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: (print("term", flush=True), sys.exit(0)))
print(os.getpid(), os.environ.get("HARNESS_S_LAUNCHER_PID"), os.getcwd(), sys.argv[1:], sys.stdin.read().strip(), flush=True)
if sys.argv[1] == "wait":
    time.sleep(60)
sys.exit(int(sys.argv[1]) if sys.argv[1].isdigit() else sys.argv[1])
"""


@pytest.fixture(scope="module")
def zygote(tmp_path_factory):
    folder = tmp_path_factory.mktemp("zygote")
    (folder / "probe.py").write_text(PROBE)
    socket = folder / "z.sock"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness_s_worker.zygote", "--socket", str(socket), "--imports", "json"],
        stdout=subprocess.DEVNULL,
    )
    for _ in range(100):
        if socket.exists():
            break
        time.sleep(0.05)
    yield folder, {**os.environ, "HARNESS_S_PYTHON_ZYGOTE": str(socket)}
    proc.terminate()
    proc.wait(5)


def launch(folder: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(LAUNCHER), "-m", "probe", *args],
        cwd=folder,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_forked_run_has_the_launchers_streams_folder_arguments_and_exit_status(zygote):
    folder, env = zygote
    proc = launch(folder, env, "3", "x")
    out, err = proc.communicate("from stdin", timeout=30)
    pid, launcher, cwd, argv, stdin = out.split(" ", 4)
    assert proc.returncode == 3, err
    assert int(pid) != proc.pid and int(launcher) == proc.pid  # forked, and it knows who stands for it
    assert (cwd, argv, stdin.strip()) == (str(folder), "['3',", "'x'] from stdin")
    failed = launch(folder, env, "a message")
    _, err = failed.communicate("", timeout=30)
    assert (failed.returncode, err.strip()) == (1, "a message")  # sys.exit("…"), as Python ends it


def test_signals_reach_the_child_and_a_killed_launcher_takes_it_along(zygote):
    folder, env = zygote
    proc = launch(folder, env, "wait")
    proc.stdin.close()  # type: ignore[union-attr]
    child = int(proc.stdout.readline().split()[0])  # type: ignore[union-attr]
    proc.send_signal(signal.SIGTERM)
    assert proc.stdout.readline().strip() == "term"  # type: ignore[union-attr]
    assert proc.wait(30) == 0
    killed = launch(folder, env, "wait")
    killed.stdin.close()  # type: ignore[union-attr]
    child = int(killed.stdout.readline().split()[0])  # type: ignore[union-attr]
    killed.kill()
    killed.wait(30)
    for _ in range(100):
        if not Path(f"/proc/{child}").exists():
            break
        time.sleep(0.05)
    assert not Path(f"/proc/{child}").exists()


def test_a_run_whose_import_read_environment_differs_runs_in_a_fresh_interpreter(zygote):
    folder, env = zygote
    proc = launch(folder, {**env, "HF_HOME": str(folder / "elsewhere")}, "0")
    out, err = proc.communicate("", timeout=60)
    pid, launcher, *_ = out.split(" ")
    assert proc.returncode == 0, err
    assert (int(pid), launcher) == (proc.pid, "None")  # the launcher became the venv's python (exec)
