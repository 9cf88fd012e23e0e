#!/usr/bin/env bash
# Creates packages/policy-worker/.venv (torch, transformers, peft, FastAPI) if it is missing or
# incomplete, from the machine's local package indexes (`pip config list`): the first one is
# passed as --index-url so pip never waits on the unreachable default index. Prints the venv's
# python on its last line. A complete venv carries a stamp of the pyproject it was made from; the
# check then only looks the packages up (find_spec, no import: importing torch and transformers
# costs seconds of CPU, and the tests ask once per process). One caller at a time (several test
# files ask at once, and .ci/run makes the venv beside npm ci): the others wait on the lock.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=packages/policy-worker/.venv
exec 9>"packages/policy-worker/.venv-lock"
flock 9
PY="$VENV/bin/python"
STAMP="$VENV/.harness-s-stamp"
MODULES="torch transformers peft regex fastapi uvicorn pytest httpx trl harness_s_worker harness_s_client"
want=$(cat packages/policy-worker/pyproject.toml packages/client-py/pyproject.toml | sha256sum | cut -d' ' -f1)
if [ -x "$PY" ] && [ -x "$VENV/bin/ruff" ] && [ -x "$VENV/bin/mypy" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ] \
  && "$PY" -c "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in sys.argv[1:]))" $MODULES 2>/dev/null; then
  echo "$PY"; exit 0
fi
rm -f "$STAMP"
echo "policy worker: creating $VENV (about a minute from the local indexes)" >&2
python3 -m venv "$VENV"
extra=$(pip config list 2>/dev/null | sed -n "s/^global.extra-index-url='\(.*\)'$/\1/p")
args=()
if [ -n "$extra" ]; then
  first=${extra%% *}
  args+=(--index-url "$first")
  for u in ${extra#"$first"}; do args+=(--extra-index-url "$u"); done
fi
# No bytecode at install: pip would compile all 12,759 files (transformers' 2,411 model files,
# sympy, pandas), 25 s of CPU of the install's 37. The venv caches the bytecode of what is imported
# instead, on first import, even where PYTHONDONTWRITEBYTECODE is set (it is on some CI images):
# without the cache every process would compile torch and transformers again (8.7 s against 3.8 s).
# The worker depends on harness-s-client, installed from its folder in the same command (pip takes
# the local project for the requirement; no index holds it).
"$VENV/bin/pip" install -q --no-compile --disable-pip-version-check "${args[@]}" -e packages/client-py -e "packages/policy-worker[test]" 2>&1 | grep -v "is ignored: it is neither a file nor a directory" >&2 || true
echo "import sys; sys.dont_write_bytecode = False" > "$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/harness_s_bytecode.pth"
"$PY" -c "import sys, importlib; [importlib.import_module(m) for m in sys.argv[1:]]" $MODULES >&2
echo "$want" > "$STAMP"
echo "$PY"
