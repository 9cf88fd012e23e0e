import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Hono } from "hono";
import OpenAI from "openai";
import { QuorumError } from "@harness-s/core/voting";
import { createRng, type HarnessSpec } from "@harness-s/core";
import { route, routerOptions, statisticalVoters } from "@harness-s/core/voting";
import { OpenAiVoter } from "@harness-s/adapters/llm";
import { listen } from "../../functions/api/local.ts";
import { makeSpec } from "../factories.ts";

/** A local OpenAI-compatible server whose answer depends on the requested model name. */
const received: { model: string; user: string }[] = [];
let server: { url: string; close: () => Promise<void> };

const candidates: HarnessSpec[] = [
  makeSpec({
    id: "sib-pages",
    postObservation: [{ on: "page:more", hint: "next_page" }],
    provenance: { direction: "contract" },
  }),
  makeSpec({
    id: "sib-auth",
    postObservation: [{ on: "error:401", hint: "login" }],
    provenance: { direction: "recovery" },
  }),
  makeSpec({
    id: "sib-budget",
    budget: { maxTurns: 8, warnAt: 2, forceSubmitAt: 1 },
    provenance: { direction: "budget" },
  }),
];

beforeAll(async () => {
  const app = new Hono().post("/v1/chat/completions", async (c) => {
    const body = await c.req.json();
    received.push({ model: body.model, user: body.messages[1].content });
    const answer = (content: string) =>
      c.json({
        id: "x",
        object: "chat.completion",
        created: 0,
        model: body.model,
        choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content } }],
        usage: { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 },
      });
    switch (body.model) {
      case "good":
        return answer(
          JSON.stringify({ ranking: ["sib-pages", "sib-budget", "sib-auth"], rationale: "pages remained" }),
        );
      case "prose":
        return answer("I think sib-pages is best.");
      case "unknown-ids":
        return answer(JSON.stringify({ ranking: ["sib-nope"] }));
      case "wrong-shape":
        return answer(JSON.stringify({ ranking: "sib-pages" }));
      case "slow":
        await new Promise((r) => setTimeout(r, 1500));
        return answer(JSON.stringify({ ranking: ["sib-auth"] }));
      default:
        return c.json({ error: { message: "overloaded" } }, 500);
    }
  });
  server = await listen(app.fetch);
});
afterAll(() => server.close());

const voter = (model: string) =>
  new OpenAiVoter(new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "test", maxRetries: 0, timeout: 1000 }), {
    id: `llm-${model}`,
    model,
  });
const input = {
  decisionId: "d",
  task: { id: "app-7", family: "app", tags: ["app", "bulk"] },
  failureTags: ["incomplete-results"],
  failedEvents: ["page:more", "submit:rejected"],
  candidates,
  profiles: {},
  poolVersion: "v",
};

describe("OpenAI-compatible LLM voter", () => {
  it("sends the task, the failure and each candidate's hooks, and returns the parsed ranking with token usage", async () => {
    const ballot = await voter("good").vote({ ...input, k: 2 });
    expect(ballot.ranking).toEqual(["sib-pages", "sib-budget", "sib-auth"]);
    expect(ballot.usage).toEqual({ promptTokens: 120, completionTokens: 30 });
    const prompt = JSON.parse(received.at(-1)!.user);
    expect(prompt.failureTags).toEqual(["incomplete-results"]);
    expect(prompt.candidates.map((c: { hooks: string }) => c.hooks)).toContain("after page:more hint next_page");
  });

  it("turns prose, unknown ids and wrong shapes into failed ballots that the quorum absorbs", async () => {
    const d = await route(input, routerOptions({ k: 1 }), {
      voters: [voter("good"), voter("prose"), voter("unknown-ids"), voter("wrong-shape"), ...statisticalVoters],
      rng: createRng(1),
    });
    const reasons = Object.fromEntries(d.failures.map((f) => [f.voterId, f.reason]));
    expect(reasons["llm-prose"]).toMatch(/answer is not JSON/);
    expect(reasons["llm-unknown-ids"]).toMatch(/unknown harnesses sib-nope/);
    expect(reasons["llm-wrong-shape"]).toMatch(/ranking/);
    expect(d.ballots.map((b) => b.voterId)).toEqual(["llm-good", ...statisticalVoters.map((v) => v.id)]);
    expect(d.chosen).toEqual(["sib-pages"]);
  });

  it("times out a slow model and survives a server error", async () => {
    const d = await route(input, routerOptions({ k: 1, quorum: 1 }), {
      voters: [voter("slow"), voter("broken"), voter("good")],
      rng: createRng(1),
    });
    const reasons = d.failures.map((f) => `${f.voterId}: ${f.reason}`).join("\n");
    expect(reasons).toMatch(/llm-slow: voter llm-slow did not answer within 1000 ms/);
    expect(d.failures.find((f) => f.voterId === "llm-slow")?.kind).toBe("timeout");
    expect(reasons).toMatch(/llm-broken: .*500/);
    expect(d.chosen).toEqual(["sib-pages"]);
  });

  it("raises QuorumError when too few LLM voters answer", async () => {
    await expect(
      route(input, routerOptions({ k: 1 }), {
        voters: [voter("prose"), voter("broken"), voter("good")],
        rng: createRng(1),
      }),
    ).rejects.toBeInstanceOf(QuorumError);
  });
});
