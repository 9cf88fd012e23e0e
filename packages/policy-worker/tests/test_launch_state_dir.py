"""The launcher's state folder: a temp folder of the worker's own ends with it (served, crashed or
its parent gone); a folder the caller names is kept. `serve` is replaced: no model is loaded."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import types
from argparse import Namespace
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness_s_worker import launch

Serve = Callable[[Namespace, object], None]


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    interval, on_term = sys.getswitchinterval(), signal.getsignal(signal.SIGTERM)
    yield
    sys.setswitchinterval(interval)
    signal.signal(signal.SIGTERM, on_term)  # main() installs its own


def run_launcher(monkeypatch: pytest.MonkeyPatch, serve: Serve, *flags: str) -> None:
    fake = types.ModuleType("harness_s_worker.server")
    fake.serve = serve  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "harness_s_worker.server", fake)
    monkeypatch.setattr(sys, "argv", ["launch", "--port", "0", "--release-freed-memory", *flags])
    launch.main()


def writes_a_checkpoint(seen: list[Path]) -> Serve:
    def serve(args: Namespace, _ap: object) -> None:
        state = Path(args.state_dir)
        (state / "policies").mkdir(parents=True)
        (state / "policies" / "v1").write_text("adapter")
        seen.append(state)

    return serve


def test_its_own_temp_folder_is_removed_when_the_worker_ends(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[Path] = []
    run_launcher(monkeypatch, writes_a_checkpoint(seen))
    assert seen[0].parent == tmp_path / "tmp" and seen[0].name.startswith("harness-s-worker-")
    assert not seen[0].exists()


def test_and_when_serving_fails(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[Path] = []

    def crashes(args: Namespace, ap: object) -> None:
        writes_a_checkpoint(seen)(args, ap)
        raise RuntimeError("the model could not be served")

    with pytest.raises(RuntimeError):
        run_launcher(monkeypatch, crashes)
    assert list((tmp_path / "tmp").iterdir()) == []


def test_and_before_it_exits_with_its_parent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    before_exit: list[Callable[[], None]] = []
    monkeypatch.setattr(launch, "watch_parent", lambda _parent, callback: before_exit.append(callback))
    seen: list[Path] = []

    def parent_dies_while_serving(args: Namespace, ap: object) -> None:
        writes_a_checkpoint(seen)(args, ap)
        before_exit[0]()  # what the watcher calls just before os._exit
        assert not Path(args.state_dir).exists()

    run_launcher(monkeypatch, parent_dies_while_serving, "--exit-with-parent")
    assert len(seen) == 1


def test_a_state_dir_the_caller_names_is_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[Path] = []
    run_launcher(monkeypatch, writes_a_checkpoint(seen), "--state-dir", str(tmp_path / "mine"))
    assert seen == [tmp_path / "mine"]
    assert (tmp_path / "mine" / "policies" / "v1").read_text() == "adapter"


TERMINATED_WHILE_SERVING = """
import os, signal, sys, time, types
fake = types.ModuleType("harness_s_worker.server")
def serve(args, ap):
    (args.state_dir / "policies").mkdir()
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)
fake.serve = serve
sys.modules["harness_s_worker.server"] = fake
sys.argv = ["launch", "--port", "0", "--release-freed-memory"]
from harness_s_worker import launch
launch.main()
"""


def test_and_when_it_is_terminated_keeping_the_signal_as_its_exit_status(tmp_path: Path) -> None:
    folder = tmp_path / "tmp"
    done = subprocess.run(
        [sys.executable, "-c", TERMINATED_WHILE_SERVING],
        env={**os.environ, "TMPDIR": str(folder)},
        cwd=Path(__file__).parents[1],
        timeout=60,
    )
    assert done.returncode == -signal.SIGTERM
    assert list(folder.iterdir()) == []
