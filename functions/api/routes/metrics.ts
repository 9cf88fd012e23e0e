import { PROMETHEUS_CONTENT_TYPE, type MetricsSource } from "@harness-s/core/observability";
import type { ApiDeps } from "../deps.ts";
import { apiRouter } from "../http.ts";
import { requireScope } from "../middleware/scope.ts";

/**
 * `GET /metrics` (under serve): the deployment's metrics in the Prometheus text format, to admin
 * keys only (401 without a key, 403 without admin). Not in the OpenAPI document: it is for a
 * scraper, not a client.
 */
export const metricsApp = (deps: ApiDeps, metrics: MetricsSource) =>
  apiRouter()
    .use(requireScope(deps, "admin"))
    .get("/", async (c) => c.body(await metrics.exposition(), 200, { "content-type": PROMETHEUS_CONTENT_TYPE }));
