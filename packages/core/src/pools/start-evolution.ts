import { ConcurrencyLimitError, NotConfiguredError, NotFoundError } from "../errors.ts";
import { ownedBy } from "../access/keys.ts";
import type { UsageMeter } from "../billing/usage.ts";
import type { Quote } from "../billing/quote-schema.ts";
import type { Prices } from "../billing/cost-of-goods.ts";
import { envelope } from "../messaging/envelope.ts";
import "./messages.ts"; // registers pool.evolve.requested
import type { MessageQueue } from "../messaging/queue.ts";
import type { CallerRescue } from "../callers/caller-rescue.ts";
import type { CallerPolicies } from "../dispatch/rollout-source.ts";
import type { Clock } from "../util/clock.ts";
import {
  EVOLUTION_ENDS,
  type PoolEvolutionRecord,
  type PoolEvolutionStore,
  zeroEvolutionUsage,
} from "./evolution-record.ts";
import {
  POOL_EVOLUTION_LIMITS,
  evolutionSlotKey,
  plannedEvolutionRollouts,
  type PoolEvolveRequest,
} from "./evolve-request.ts";

/** What asking for an evolution needs; with `quoting`, it is quoted first and refused (402) above a budget. */
export interface StartEvolutionDeps {
  evolutions: PoolEvolutionStore;
  coordinator: MessageQueue;
  callers?: CallerPolicies;
  clock: Clock;
  newId: () => string;
  /**
   * Prices the evolution (quoting's `budgetedPricer`: refused with a 402 above its or its key's USD budget); none:
   * unpriced.
   */
  price?: (req: PoolEvolveRequest) => Promise<{ quote: Quote; tariff: Prices }>;
  /** Each key's evolutions in flight (`POOL_EVOLUTION_LIMITS.activePerKey`): a 429 past them; none: unlimited. */
  slots?: Pick<UsageMeter, "acquireSlot" | "releaseSlot">;
}

/**
 * One dev task's rollouts as a caller rescue would run them: the request's endpoint, environment, system text and pin.
 */
export function callerRescueOf(req: PoolEvolveRequest, task: PoolEvolveRequest["devTasks"][number]): CallerRescue {
  return {
    endpoint: req.endpoint,
    environment: req.environment,
    task,
    system: req.system,
    maxTokens: req.maxTokens,
    ...(req.weightVersion === undefined ? {} : { weightVersion: req.weightVersion }),
    ...(req.servedModel === undefined ? {} : { servedModel: req.servedModel }),
  };
}

/**
 * Every check an evolution request must pass before anything is recorded, metered or quoted, the
 * same for `POST /v1/pools` and `POST /v1/quotes`: the deployment evolves pools with callers'
 * policies, the key's endpoint (its own, sampled as pinned) and its environment (through the
 * outbound guard). Answers the callers' policies it was checked with.
 */
export async function admitEvolution(
  req: PoolEvolveRequest,
  keyId: string,
  deps: { callers?: CallerPolicies },
): Promise<CallerPolicies> {
  const callers = deps.callers;
  if (!callers) throw new NotConfiguredError("pool evolution with the caller's own policy is not deployed here");
  await callers.checkEndpoint(keyId, callerRescueOf(req, req.devTasks[0]!));
  await callers.checkEnvironment(req.environment);
  return callers;
}

/**
 * `POST /v1/pools` with `evolve`: checks the key's endpoint (its own, sampled as pinned) and
 * environment (through the outbound guard) before anything is recorded, pins the weight version
 * (the endpoint's now, or the one asked for), quotes the job (refused with 402 above the
 * request's or the key's USD budget), records it `queued` and asks the coordinator to run it.
 *
 * @example
 * const job = await startPoolEvolution(PoolEvolveRequest.parse(body), key.id, deps);
 */
export async function startPoolEvolution(
  req: PoolEvolveRequest,
  keyId: string,
  deps: StartEvolutionDeps,
): Promise<PoolEvolutionRecord> {
  const callers = await admitEvolution(req, keyId, deps);
  const weightVersion = req.weightVersion ?? (await callers.currentVersion(keyId, req.endpoint));
  const priced = deps.price ? await deps.price(req) : undefined;
  const now = deps.clock.now();
  const record: PoolEvolutionRecord = {
    id: deps.newId(),
    keyId,
    request: req,
    weightVersion,
    status: "queued",
    createdAt: now,
    updatedAt: now,
    attempts: 0,
    progress: {
      done: 0,
      total: req.evolution.directions.length * req.evolution.rounds,
      label: `queued: at most ${plannedEvolutionRollouts(req)} rollouts`,
    },
    usage: zeroEvolutionUsage,
    ...(priced ? { quote: priced.quote, tariff: priced.tariff } : {}),
  };
  const slots = deps.slots;
  if (slots && !(await slots.acquireSlot(evolutionSlotKey(keyId), POOL_EVOLUTION_LIMITS.activePerKey)))
    throw new ConcurrencyLimitError(POOL_EVOLUTION_LIMITS.activePerKey, "pool evolutions");
  try {
    await deps.evolutions.create(record);
    await deps.coordinator.send([
      envelope(
        "pool.evolve.requested",
        `pool-evolution:${record.id}`,
        { evolutionId: record.id },
        { keyId, jobId: record.id },
      ),
    ]);
  } catch (err) {
    await slots?.releaseSlot(evolutionSlotKey(keyId));
    throw err;
  }
  return record;
}

/**
 * `POST /v1/pools/evolutions/{id}/cancel`: a queued job ends `cancelled` at once (its key's slot
 * given back); a running one stops within `EVOLUTION_SLICE_MS` and a rollout (what it spent is
 * metered); an ended one is left as it is. Another key's job is "not found".
 */
export async function cancelPoolEvolution(
  id: string,
  key: { id: string; scopes: readonly string[] },
  deps: { evolutions: PoolEvolutionStore; clock: Clock; slots?: Pick<UsageMeter, "releaseSlot"> },
): Promise<PoolEvolutionRecord> {
  const before = await ownedBy(deps.evolutions, key, "pool evolution").get(id);
  if (EVOLUTION_ENDS.includes(before.status)) return before;
  const after = await deps.evolutions.requestCancel(id, deps.clock.now());
  if (!after) throw new NotFoundError("pool evolution", id);
  if (before.status === "queued" && after.status === "cancelled")
    await deps.slots?.releaseSlot(evolutionSlotKey(after.keyId));
  return after;
}
