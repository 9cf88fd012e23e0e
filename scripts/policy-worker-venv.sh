#!/usr/bin/env bash
# Creates packages/policy-worker/.venv (torch, transformers, peft, FastAPI) if it is missing or
# incomplete, from the machine's local package indexes (`pip config list`): the first one is
# passed as --index-url so pip never waits on the unreachable default index. Prints the venv's
# python on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=packages/policy-worker/.venv
PY="$VENV/bin/python"
if [ -x "$PY" ] && [ -x "$VENV/bin/ruff" ] && [ -x "$VENV/bin/mypy" ] && "$PY" -c "import torch, transformers, peft, regex, fastapi, uvicorn, pytest, httpx, trl, harness_s_worker" 2>/dev/null; then
  echo "$PY"; exit 0
fi
echo "policy worker: creating $VENV (about a minute from the local indexes)" >&2
python3 -m venv "$VENV"
extra=$(pip config list 2>/dev/null | sed -n "s/^global.extra-index-url='\(.*\)'$/\1/p")
args=()
if [ -n "$extra" ]; then
  first=${extra%% *}
  args+=(--index-url "$first")
  for u in ${extra#"$first"}; do args+=(--extra-index-url "$u"); done
fi
"$VENV/bin/pip" install -q --disable-pip-version-check "${args[@]}" -e "packages/policy-worker[test]" 2>&1 | grep -v "is ignored: it is neither a file nor a directory" >&2 || true
"$PY" -c "import torch, transformers, peft, fastapi, uvicorn" >&2
echo "$PY"
