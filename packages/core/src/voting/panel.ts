/* Invariants: see ./README.md. */
import { z } from "zod";
import type { Clock } from "../util/clock.ts";
import type { Voter } from "./ballot.ts";

const id = z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, "lower-case letters, digits, '.', '_', '-'");

/** A statistical voter of the panel, by the id it has among `statisticalVoters`. */
export const StatisticalPanelVoter = z
  .object({ kind: z.literal("statistical"), id, weight: z.number().positive().default(1) })
  .strict();

/** An LLM voter of the panel: any OpenAI-compatible chat endpoint. */
export const LlmPanelVoter = z
  .object({
    kind: z.literal("llm"),
    id,
    baseURL: z.string().url(),
    model: z.string().min(1),
    /**
     * The name of the secret (environment variable locally) that holds the API key; none for servers that need no key.
     */
    apiKeySecret: z.string().min(1).optional(),
    weight: z.number().positive().default(1),
    timeoutMs: z.number().int().positive().max(120_000).default(20_000),
    maxTokens: z.number().int().min(16).max(8192).default(400),
    /** USD per prompt token and per completion token, for the ballot's cost. */
    price: z
      .object({ input: z.number().min(0).default(0), output: z.number().min(0).default(0) })
      .strict()
      .default({ input: 0, output: 0 }),
  })
  .strict();

export const PanelVoter = z.discriminatedUnion("kind", [StatisticalPanelVoter, LlmPanelVoter]);
export type PanelVoter = z.infer<typeof PanelVoter>;

/**
 * The voter panel, configured once (a file for the CLI and the local stack, the same document in
 * a table or secret in the cloud). PoLL as the model: several smaller models from different
 * families, equal weights by default. A decision needs `quorum` answering voters (default a
 * majority); below it the route fails, or, with `onQuorumMiss: "statistical"`, the statistical
 * voters decide and the decision says so.
 *
 * @example
 * const panel = VoterPanel.parse(JSON.parse(await readFile("panel.json", "utf8")));
 */
export const VoterPanel = z
  .object({
    voters: z.array(PanelVoter).min(1).max(16),
    quorum: z.number().int().min(1).optional(),
    onQuorumMiss: z.enum(["error", "statistical"]).default("error"),
  })
  .strict()
  .superRefine((p, ctx) => {
    const ids = p.voters.map((v) => v.id);
    const twice = ids.filter((v, i) => ids.indexOf(v) !== i);
    if (twice.length)
      ctx.addIssue({
        code: "custom",
        path: ["voters"],
        message: `voter ids must be unique: ${[...new Set(twice)].join(", ")} listed twice`,
      });
    if (p.quorum !== undefined && p.quorum > p.voters.length)
      ctx.addIssue({
        code: "custom",
        path: ["quorum"],
        message: `quorum ${p.quorum} is more than the ${p.voters.length} voters`,
      });
  });
export type VoterPanel = z.infer<typeof VoterPanel>;

/**
 * How a decision is made beyond its voters, when a panel is configured: the voters' weights and
 * quorum, the voters that decide below it, each voter's deadline, and the clock that times it.
 */
export interface PanelSettings {
  options: { weights?: Record<string, number>; quorum?: number };
  fallback?: readonly Voter[];
  timeoutMs?: number;
  clock?: Clock;
}

/** Each voter's weight in the aggregation. */
export const panelWeights = (panel: VoterPanel): Record<string, number> =>
  Object.fromEntries(panel.voters.map((v) => [v.id, v.weight]));

/** The panel's quorum: as configured, else a majority of its voters. */
export const panelQuorum = (panel: VoterPanel): number =>
  panel.quorum ?? Math.max(1, Math.ceil(panel.voters.length / 2));
