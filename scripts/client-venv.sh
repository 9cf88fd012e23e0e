#!/usr/bin/env bash
# Creates packages/client-py/.venv: an empty venv, then `pip install packages/client-py` alone (no
# torch, no worker), from the machine's local package indexes as scripts/policy-worker-venv.sh
# reads them. Records what that install pulled in ($VENV/.bare-install.txt, `pip list` as
# name==version) and where `import harness_s_client` comes from (site-packages, not the source),
# then adds the test tools (pytest, mypy, ruff, pydantic). Remade when the package's pyproject or
# sources change (a stamp of both). Prints the venv's python on its last line. One caller at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
PKG=packages/client-py
VENV=$PKG/.venv
exec 9>"$PKG/.venv-lock"
flock 9
PY="$VENV/bin/python"
STAMP="$VENV/.harness-s-stamp"
want=$(cat "$PKG/pyproject.toml" $(find "$PKG/harness_s_client" -name '*.py' -o -name py.typed | sort) | sha256sum | cut -d' ' -f1)
if [ -x "$PY" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ]; then
  echo "$PY"; exit 0
fi
echo "client: creating $VENV (an empty venv, then the client alone)" >&2
rm -rf "$VENV"
python3 -m venv "$VENV"
extra=$(pip config list 2>/dev/null | sed -n "s/^global.extra-index-url='\(.*\)'$/\1/p")
args=()
if [ -n "$extra" ]; then
  first=${extra%% *}
  args+=(--index-url "$first")
  for u in ${extra#"$first"}; do args+=(--extra-index-url "$u"); done
fi
pip_install() { "$VENV/bin/pip" install -q --disable-pip-version-check "${args[@]}" "$@" 2>&1 | grep -v "is ignored: it is neither a file nor a directory" >&2 || true; }
before=$("$VENV/bin/pip" list --format=freeze --disable-pip-version-check 2>/dev/null | sort)
pip_install "./$PKG"
after=$("$VENV/bin/pip" list --format=freeze --disable-pip-version-check 2>/dev/null | sort)
# What installing the client added to the empty venv (pip and setuptools came with the venv).
comm -13 <(echo "$before") <(echo "$after") > "$VENV/.bare-install.txt"
if grep -qiE '^(torch|transformers|peft|fastapi|uvicorn|numpy)==' "$VENV/.bare-install.txt"; then
  echo "client: the bare install pulled in a GPU/worker stack:" >&2; cat "$VENV/.bare-install.txt" >&2; exit 1
fi
abs_py="$(pwd)/$PY"
(cd / && "$abs_py" -c 'import harness_s_client, sys; print(harness_s_client.__file__)') > "$VENV/.bare-import.txt" 2>&1 || { cat "$VENV/.bare-import.txt" >&2; exit 1; }
pip_install "./$PKG[test]"
echo "$want" > "$STAMP"
echo "$PY"
