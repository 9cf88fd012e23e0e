import { z } from "zod";
import { type KeyPageQuery, keyPage } from "../util/key-page.ts";
import { envName } from "./environment.ts";
import { ExperimentState, type ExperimentRecord, type ExperimentStore } from "./records.ts";

/** One run in its key's list: enough to pick it (`GET /v1/experiments/{id}` has the rest). */
export const ExperimentListItem = z.object({
  id: z.string(),
  status: ExperimentState,
  createdAt: z.number(),
  updatedAt: z.number(),
  /** Where it runs: the suite's or family's name, or `openenv` for a caller's own server. */
  env: z.string(),
  model: z.string().nullable(),
  arms: z.number().int().describe("how many arms it compares"),
  seeds: z.number().int().describe("how many seeds each arm runs"),
  progress: z.object({ done: z.number().int(), total: z.number().int() }),
});
export type ExperimentListItem = z.infer<typeof ExperimentListItem>;

export const ExperimentList = z.object({
  items: z.array(ExperimentListItem),
  next: z.string().nullable().describe("the cursor of the next page (`?cursor=`), null at the end"),
});
export type ExperimentList = z.infer<typeof ExperimentList>;

const itemOf = (r: ExperimentRecord): ExperimentListItem => ({
  id: r.id,
  status: r.status,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
  env: envName(r.request.env),
  model: r.request.model ?? null,
  arms: r.request.arms.length,
  seeds: r.request.seeds.length,
  progress: { done: r.progress.done, total: r.progress.total },
});

/**
 * The runs key `keyId` started, newest first, a page at a time (an admin key lists its own too:
 * no key's list holds another key's run; a cursor of another key's or list is a 400).
 *
 * @example
 * const first = await listExperiments("k1", { limit: 20 }, deps);
 * const second = await listExperiments("k1", { limit: 20, cursor: first.next! }, deps);
 */
export const listExperiments = (
  keyId: string,
  query: KeyPageQuery,
  deps: { experiments: ExperimentStore },
): Promise<ExperimentList> =>
  keyPage("experiments", keyId, query, (req) => deps.experiments.listByKey(keyId, req), itemOf);
