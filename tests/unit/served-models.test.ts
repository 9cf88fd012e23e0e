import { describe, expect, it } from "vitest";
import { ValidationError } from "@harness-s/core";
import { EMBEDDED_ONLY, ExperimentRequest, ensureOffered } from "@harness-s/core/experiment";
import { ServedModels, listServedModels, servedOffers } from "@harness-s/core/models";
import { SERVED_MODELS } from "../../infra/settings.ts";
import { endpointModel } from "../../stacks/policy-endpoint-settings.ts";

const tiny = (name: string) => ({ name, parameters: 100_000, contextTokens: 4096, chatTemplate: "chatml" });

describe("served models", () => {
  it("are declared once for the stacks: each parses (its folder dropped, no price listed), and the endpoint serves the one folder", () => {
    const models = ServedModels.parse(SERVED_MODELS);
    expect(models.length).toBeGreaterThan(0);
    expect(Object.keys(models[0]!)).not.toContain("folder");
    // No per-token price is listed: none is charged (issue 70 item 2; GPU seconds pass through at cost instead).
    expect(Object.keys(models[0]!).filter((k) => k.startsWith("price"))).toEqual([]);
    expect(endpointModel().folder).toBe(SERVED_MODELS[0].folder);
    expect(() => endpointModel([...SERVED_MODELS, { ...SERVED_MODELS[0], name: "other" }] as never)).toThrow(
      /one worker, one base model/,
    );
  });

  it("name each model once", () => {
    expect(ServedModels.safeParse([tiny("a"), tiny("a")]).error?.issues[0]?.message).toBe("model a is declared twice");
  });

  it("feed the offers: a request naming another model is a 400 naming the served ones; none named runs as before", () => {
    const offers = servedOffers(ServedModels.parse([tiny("a"), tiny("b")]), EMBEDDED_ONLY);
    expect(offers.models).toEqual(["a", "b"]);
    expect(listServedModels(offers).models.map((m) => m.name)).toEqual(["a", "b"]);
    expect(listServedModels(undefined)).toEqual({ models: [], environments: ["embedded"], callerEnvironments: false });
    expect(listServedModels(offers)).toMatchObject({ environments: ["embedded"], callerEnvironments: false });
    expect(() => ensureOffered(ExperimentRequest.parse({ model: "a" }), offers)).not.toThrow();
    expect(() => ensureOffered(ExperimentRequest.parse({}), offers)).not.toThrow();
    const refused = (() => {
      try {
        ensureOffered(ExperimentRequest.parse({ model: "c" }), offers);
      } catch (err) {
        return err;
      }
    })();
    expect(refused).toBeInstanceOf(ValidationError);
    expect((refused as ValidationError).issues).toEqual(["this deployment serves a, b, not c"]);
  });
});
