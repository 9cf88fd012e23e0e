"""The suite LM: a small Llama-architecture model with a tokenizer trained on the suite's text,
warm-started by supervised training on conversations of the embedded initial policy, built
deterministically from a recipe and cached under `<cache>/suite-lm-<hash>` (the hash covers the
recipe and the conversations). The worker serves the folder like any Hugging Face model:
`python -m harness_s_worker.launch --model <cache>/suite-lm-<hash>`.

`python -m harness_s_worker.suite_lm --recipe recipe.json --data warm.jsonl --cache-dir DIR`
prints `{"path", "hash", "cached", ...}`; progress goes to stderr."""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path
from typing import Any

from .suite_lm_recipe import Recipe, recipe_hash, size_parameters


def build_cached(recipe: Recipe, data_bytes: bytes, cache_dir: Path, threads: int | None = None) -> dict[str, Any]:
    """The cached model for this recipe and data, built first when missing (atomically: a
    crashed build leaves no folder that looks finished)."""
    key = recipe_hash(recipe, data_bytes)
    final = cache_dir / f"suite-lm-{key}"
    if (final / "suite-lm.json").exists():
        return {"path": str(final), "hash": key, "cached": True, **json.loads((final / "suite-lm.json").read_text())}
    # Imported only to build: torch and transformers take seconds to import, a cached ask none.
    from .suite_lm_build import build
    from .threads import set_threads

    set_threads(size_parameters(recipe.size), "cpu", threads)
    cache_dir.mkdir(parents=True, exist_ok=True)
    work = cache_dir / f".building-{key}-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        record = build(recipe, data_bytes, work)
        shutil.rmtree(final, ignore_errors=True)
        work.rename(final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"path": str(final), "hash": key, "cached": False, **record}


def main() -> None:
    ap = argparse.ArgumentParser(description="Build (or find cached) the suite LM")
    ap.add_argument("--recipe", type=Path, required=True, help="the recipe as JSON (see Recipe)")
    ap.add_argument("--data", type=Path, required=True, help="warm-start conversations, one JSON object per line")
    ap.add_argument("--cache-dir", type=Path, required=True)
    ap.add_argument(
        "--threads", type=int, default=None, help="torch's CPU threads (default: 1 under 20M parameters, else torch's)"
    )
    args = ap.parse_args()
    recipe = Recipe.model_validate_json(args.recipe.read_text())
    print(json.dumps(build_cached(recipe, args.data.read_bytes(), args.cache_dir, args.threads)))


if __name__ == "__main__":
    main()
