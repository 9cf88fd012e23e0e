"""A cached suite LM is answered from its folder without importing the model stack."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness_s_worker.suite_lm_recipe import Recipe, recipe_hash

ASK = """
import json, sys
from pathlib import Path
from harness_s_worker.suite_lm import build_cached
from harness_s_worker.suite_lm_recipe import Recipe
record = build_cached(Recipe(size="toy"), b"data", Path(sys.argv[1]))
print(json.dumps({"cached": record["cached"], "weights": record["weights_sha256"], "torch": "torch" in sys.modules}))
"""


def test_a_cached_ask_reads_the_record_and_imports_no_torch(tmp_path: Path) -> None:
    folder = tmp_path / f"suite-lm-{recipe_hash(Recipe(size='toy'), b'data')}"
    folder.mkdir()
    (folder / "suite-lm.json").write_text(json.dumps({"weights_sha256": "abc"}))
    out = subprocess.run(
        [sys.executable, "-c", ASK, str(tmp_path)],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[1],
    )
    assert json.loads(out.stdout) == {"cached": True, "weights": "abc", "torch": False}
