#!/usr/bin/env bash
# The local AppWorld- and SWE-ReX-protocol servers confine the agent's code with bubblewrap:
# install it from Debian's packages when it is missing (as root), then check that it runs here.
set -euo pipefail
if ! command -v bwrap >/dev/null 2>&1; then
  echo "bwrap not found: installing bubblewrap for the fixture servers' sandbox"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap
fi
bwrap --unshare-all --die-with-parent --ro-bind / / true
echo "bubblewrap $(bwrap --version | awk '{print $2}') runs here"
