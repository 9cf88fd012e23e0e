import { $, createRoute } from "@hono/zod-openapi";
import { z } from "zod";
import { ServedModel, listServedModels } from "@harness-s/core/models";
import type { ApiDeps } from "../deps.ts";
import { apiRouter } from "../http.ts";
import { anyKey } from "../middleware/scope.ts";
import { errors, jsonOf } from "../openapi-parts.ts";

const ModelList = z.object({
  models: z.array(ServedModel),
  environments: z
    .array(z.string())
    .describe("the environments an experiment's `env` may name: the benchmark families this deployment runs"),
  callerEnvironments: z
    .boolean()
    .describe('whether an experiment may run on the caller\'s own OpenEnv server (`env: {kind: "openenv", …}`)'),
});

/** `/v1/models`: the base models this deployment's policy endpoint serves, for an experiment's `model`. */
export const modelRoutes = {
  list: createRoute({
    method: "get",
    path: "/",
    operationId: "listModels",
    tags: ["experiments"],
    summary:
      "The base models this deployment serves (name, parameters, context, chat template family); an experiment's model names one, and each arm trains its own LoRA adapter on it",
    responses: {
      200: jsonOf(
        "the served models (none: experiments run on each environment's own policy) and the environments offered",
        ModelList,
      ),
      401: errors[401],
      414: errors[414],
      429: errors[429],
      503: errors[503],
    },
  }),
};

/** Any key may list them; the request is metered like any other. */
export const modelsApp = (deps: ApiDeps) =>
  $(apiRouter().use(anyKey(deps))).openapi(modelRoutes.list, (c) => c.json(listServedModels(deps.offers), 200));
