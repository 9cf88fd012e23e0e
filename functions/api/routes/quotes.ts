import { createRoute } from "@hono/zod-openapi";
import { Quote, QuoteRequest, quoteRequest } from "@harness-s/core/billing";
import { authenticate } from "@harness-s/core/access";
import type { ApiDeps } from "../deps.ts";
import { apiRouter, parseBody, requireScope } from "../http.ts";
import { bodyErrors, errors, jsonBody, jsonOf } from "../openapi-parts.ts";
import { pricing } from "./account.ts";

/** `/v1/quotes`: what an experiment or a rescue would cost, before it is asked for. */
export const quoteRoutes = {
  create: createRoute({
    method: "post",
    path: "/",
    operationId: "quote",
    tags: ["experiments"],
    summary:
      "Estimate an experiment ({experiment: …}) or a rescue ({rescue: …}): rollouts, usage, cost of goods, charge, and the basis (this deployment's measured usage per rollout, or the defaults)",
    request: { body: jsonBody(QuoteRequest) },
    responses: { 200: jsonOf("the quote", Quote), ...errors, ...bodyErrors },
  }),
};

export const quotesApp = (deps: ApiDeps) =>
  apiRouter().openapi(quoteRoutes.create, async (c) => {
    await authenticate(c.req.header("authorization"), deps.keys); // a 401 before the body is read
    const req = await parseBody(c, QuoteRequest, deps.maxBodyBytes, deps.bodyTimeouts);
    await requireScope(c, "experiment" in req ? "experiments" : "rescues", deps);
    return c.json(await quoteRequest(req, pricing(deps)), 200);
  });
