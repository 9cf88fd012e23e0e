#!/usr/bin/env bash
# Makes sure Debian's Chromium is at /usr/bin/chromium (what the console's browser tests drive
# through playwright-core; no browser of Playwright's own is downloaded): installs it from
# Debian's packages when it is missing, as .ci/run does for Java and MariaDB.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then /usr/bin/chromium --version 2>/dev/null || true; exit 0; fi
echo "chromium not found: installing Debian's chromium"
apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
/usr/bin/chromium --version
