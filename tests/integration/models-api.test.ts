import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryQueue } from "@harness-s/adapters/stores";
import { EMBEDDED_ONLY } from "@harness-s/core/experiment";
import { ServedModels, servedOffers } from "@harness-s/core/models";
import { openApiDocument } from "../../functions/api/openapi.ts";
import { addKey, memoryApiDeps, startApi } from "../api-factory.ts";

const models = ServedModels.parse([
  { name: "a", parameters: 101_632, contextTokens: 4096, chatTemplate: "chatml" },
  {
    name: "b",
    parameters: 7_615_616_512,
    contextTokens: 32_768,
    chatTemplate: "llama3",
    pricePerMillionSampledUsd: 1.5, // a declaration from before: dropped, never listed (none is charged)
  },
]);
const coordinator = new MemoryQueue();
const deps = memoryApiDeps({ offers: servedOffers(models, EMBEDDED_ONLY), coordinator });
let api: { url: string; close: () => Promise<void> };
let routeOnly = "";
let experimenter = "";

beforeAll(async () => {
  routeOnly = await addKey(deps, "route-only", ["route"]);
  experimenter = await addKey(deps, "experimenter", ["experiments"]);
  api = await startApi(deps);
});
afterAll(() => api.close());

const get = (key?: string) => fetch(`${api.url}/v1/models`, { headers: key ? { authorization: `Bearer ${key}` } : {} });

describe("GET /v1/models", () => {
  it("lists the served models to any key, each request metered; 401 without a key", async () => {
    const res = await get(routeOnly);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ models, environments: ["embedded"], callerEnvironments: false });
    expect(JSON.stringify(models)).not.toContain("price");
    await get(routeOnly);
    expect((await deps.meter.get("route-only")).requests).toBe(2);
    expect((await get()).status).toBe(401);
  });

  it("is documented with its answers and errors", () => {
    const op = (
      openApiDocument() as unknown as {
        paths: Record<string, Record<string, { operationId: string; responses: Record<string, unknown> }>>;
      }
    ).paths["/v1/models"]!.get!;
    expect(op.operationId).toBe("listModels");
    expect(Object.keys(op.responses).sort()).toEqual(["200", "401", "414", "429", "503"]);
  });
});

describe("an experiment's model", () => {
  const start = (body: unknown) =>
    fetch(`${api.url}/v1/experiments`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${experimenter}` },
      body: JSON.stringify(body),
    });

  it("naming a model not served is a 400 naming the served ones, nothing recorded or queued; a served one is taken", async () => {
    const refused = await start({ model: "c", seeds: [1], budget: { rollouts: 100 } });
    expect(refused.status).toBe(400);
    const body = await refused.json();
    expect(body.error.code).toBe("VALIDATION_FAILED");
    expect(body.error.issues).toEqual(["this deployment serves a, b, not c"]);
    expect(coordinator.take()).toEqual([]);
    expect(await deps.meter.slotsHeld("experimenter")).toBe(0);
    const taken = await start({ model: "a", seeds: [1], budget: { rollouts: 100 } });
    expect(taken.status).toBe(202);
    const { id, request } = await taken.json();
    expect(request.model).toBe("a");
    expect((await deps.experiments.get(id))?.request.model).toBe("a");
    expect(coordinator.take()).toHaveLength(1);
  });
});
