#!/usr/bin/env bash
# The tests that run again on the Lambdas' Node (`npm run test:node22`, after `npm test` in .ci/run):
# every unit test, and the integration tests of the Lambda handlers:
#   gateway              the API Lambda's composition root (functions/api/lambda.ts) as two Node processes
#   profile-worker       the profile and vote handlers
#   rescue-http, rescue-budget, policy-endpoint   the dispatch handler
#   local-aws-experiment the dispatch, vote and coordinator handlers over DynamoDB Local and fauxqs
#   caller-rescue        the dispatch handler's caller rollouts (the local stack, a tiny policy worker, env-serve)
# policy-worker.test.ts (the dispatch handler and the API Lambda against the Python worker) is left
# to the machine's Node: its minutes are the worker's, which no Node version changes.
set -euo pipefail
cd "$(dirname "$0")/.."
export NODE_OPTIONS="${NODE_OPTIONS:-} --max-semi-space-size=32"
exec bash scripts/node22.sh node node_modules/vitest/vitest.mjs run --project unit --project unit-isolated --project integration tests/unit/ \
  tests/integration/gateway.test.ts \
  tests/integration/profile-worker.test.ts \
  tests/integration/rescue-http.test.ts \
  tests/integration/rescue-budget.test.ts \
  tests/integration/policy-endpoint.test.ts \
  tests/integration/local-aws-experiment.test.ts \
  tests/integration/caller-rescue.test.ts
