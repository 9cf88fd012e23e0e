import { createRoute } from "@hono/zod-openapi";
import type { Context } from "hono";
import { Quote } from "@harness-s/core/billing";
import { QuoteRequest, quoteAdmitted } from "@harness-s/core/quoting";
import type { ApiDeps } from "../deps.ts";
import { apiRouter, withMiddleware } from "../http.ts";
import { readBody } from "../middleware/body.ts";
import { authenticated, requireScope } from "../middleware/scope.ts";
import { bodyErrors, errors, jsonBody, jsonOf, notFound } from "../openapi-parts.ts";
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
    description:
      "The request is checked as its own start checks it before it is priced: an environment or model this deployment does not offer, a URL the outbound guard refuses, another key's pool or endpoint is the same 400 or 404 the request itself would get.",
    responses: {
      200: jsonOf("the quote", Quote),
      ...notFound("pool, task or policy endpoint of this key"),
      ...errors,
      ...bodyErrors,
    },
  }),
};

/**
 * A quote needs the scope of what it quotes, which only its body says: a 401 comes before the body is read, a 403
 * after.
 */
const scopeOfQuote = (c: Context) => ("experiment" in (c.get("body") as QuoteRequest) ? "experiments" : "rescues");

export const quotesApp = (deps: ApiDeps) =>
  apiRouter().openapi(
    withMiddleware(
      quoteRoutes.create,
      authenticated(deps),
      readBody(deps, QuoteRequest),
      requireScope(deps, scopeOfQuote),
    ),
    async (c) =>
      c.json(
        await quoteAdmitted(c.var.body, c.var.key, { ...deps, ...pricing(deps), newId: () => deps.newId("dec") }),
        200,
      ),
  );
