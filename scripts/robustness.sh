#!/usr/bin/env bash
# Runs the default experiment on seeds 1-25 (two processes: 1-5 and 6-25) with extra CLI flags,
# then pools them with `harness-s report` (the summary one run on seeds 1-25 would give) and
# prints the table, the acceptance figures and the paired differences. ~4 min on 2 cores.
# Usage: scripts/robustness.sh [experiment flags]   (TAG names the folders under /tmp)
set -euo pipefail
tag=${TAG:-rob}
for s in 1-5 6-25; do
  rm -rf "/tmp/$tag-$s"
  node --import tsx packages/cli/src/main.ts experiment --seeds "$s" --out "/tmp/$tag-$s" "$@" >/dev/null 2>&1 &
done
wait
node --import tsx packages/cli/src/main.ts report "/tmp/$tag-1-5" "/tmp/$tag-6-25" --out "/tmp/$tag-pooled"
sed -n '/^## Paired differences/,/^## Acceptance/p' "/tmp/$tag-pooled/report.md" | sed '$d'
echo "full report: /tmp/$tag-pooled/report.md"
