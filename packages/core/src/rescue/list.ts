import { z } from "zod";
import { type KeyPageQuery, keyPage } from "../util/key-page.ts";
import type { RescueJob } from "./job-record.ts";
import { RescueStatus, rescueStatus } from "./status.ts";

type StatusDeps = Parameters<typeof rescueStatus>[1];

/** One rescue in its key's list: enough to pick it (`GET /v1/rescues/{id}` has its slots). */
export const RescueListItem = z.object({
  id: z.string(),
  status: RescueStatus.shape.status,
  createdAt: z.number(),
  poolId: z.string(),
  taskId: z.string(),
  chosen: z.number().int().describe("how many harnesses it runs"),
  expected: z.number().int().describe("its rollout slots"),
  completed: z.number().int().describe("slots stored so far"),
  failed: z.number().int().describe("slots given up on"),
});
export type RescueListItem = z.infer<typeof RescueListItem>;

export const RescueList = z.object({
  items: z.array(RescueListItem),
  next: z.string().nullable().describe("the cursor of the next page (`?cursor=`), null at the end"),
});
export type RescueList = z.infer<typeof RescueList>;

async function itemOf(job: RescueJob, deps: StatusDeps): Promise<RescueListItem> {
  const s = await rescueStatus(job.id, deps);
  return {
    id: job.id,
    status: s.status,
    createdAt: job.createdAt,
    poolId: job.poolId,
    taskId: job.taskId,
    chosen: job.chosen.length,
    expected: job.expected,
    completed: s.completed,
    failed: s.failed.length,
  };
}

/**
 * The rescues key `keyId` started, newest first, a page at a time, each with its status as
 * `GET /v1/rescues/{id}` derives it (no key's list holds another key's rescue; a cursor of another
 * key's or list is a 400).
 *
 * @example
 * const page = await listRescues("k1", { limit: 20 }, deps);
 */
export const listRescues = (keyId: string, query: KeyPageQuery, deps: StatusDeps): Promise<RescueList> =>
  keyPage(
    "rescues",
    keyId,
    query,
    (req) => deps.jobs.listByKey(keyId, req),
    (job) => itemOf(job, deps),
  );
