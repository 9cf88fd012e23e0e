"""A user's mypy --strict sees the installed client's types (its py.typed): a script written
against it passes, and one that misuses it is told so (a type the client declares, not Any)."""

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def mypy(path: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    # Run from outside the source tree: the client resolves as installed (site-packages), as a user's would.
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--python-version", "3.11", str(path)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def installed() -> bool:
    """The client in this interpreter's site-packages, as a user installs it (an editable install,
    as in the worker's venv, reaches mypy through an import hook it cannot follow)."""
    return (Path(sysconfig.get_paths()["purelib"]) / "harness_s_client" / "py.typed").is_file()


@pytest.mark.skipif(
    not installed(), reason="needs the client installed as a user installs it: scripts/client-venv.sh's venv"
)
def test_mypy_strict_on_a_user_script_sees_the_clients_types(tmp_path):
    ok = mypy(HERE / "fixtures" / "user_script.py", tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = tmp_path / "misuse.py"
    bad.write_text(
        "from harness_s_client import HarnessS\ndef f(c: HarnessS) -> str:\n    s = c.rescue('rsc_1')\n    n: str = s['completed']\n    c.start_rescue('p', 'no-commit')\n    return n\n"
    )
    got = mypy(bad, tmp_path)
    assert got.returncode == 1, got.stdout
    assert 'Incompatible types in assignment (expression has type "int", variable has type "str")' in got.stdout
    assert 'Argument 2 to "start_rescue" of "HarnessS" has incompatible type "str"' in got.stdout
