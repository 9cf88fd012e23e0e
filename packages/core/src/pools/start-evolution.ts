import { NotConfiguredError } from "../errors.ts";
import { ensureWithinBudget, quoteRequest, type QuotingDeps } from "../billing/budgets.ts";
import { envelope } from "../messaging/envelope.ts";
import type { MessageQueue } from "../messaging/queue.ts";
import type { CallerRescue } from "../rescue/caller-rescue.ts";
import type { CallerPolicies } from "../rescue/rollout-source.ts";
import type { Clock } from "../util/clock.ts";
import { type PoolEvolutionRecord, type PoolEvolutionStore, zeroEvolutionUsage } from "./evolution-record.ts";
import { plannedEvolutionRollouts, type PoolEvolveRequest } from "./evolve-request.ts";

/** What asking for an evolution needs; with `quoting`, it is quoted first and refused (402) above a budget. */
export interface StartEvolutionDeps {
  evolutions: PoolEvolutionStore;
  coordinator: MessageQueue;
  callers?: CallerPolicies;
  clock: Clock;
  newId: () => string;
  quoting?: QuotingDeps & { keyBudgetUsd?: number };
}

/** One dev task's rollouts as a caller rescue would run them: the request's endpoint, environment, system text and pin. */
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
export async function admitEvolution(req: PoolEvolveRequest, keyId: string, deps: { callers?: CallerPolicies }): Promise<CallerPolicies> {
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
export async function startPoolEvolution(req: PoolEvolveRequest, keyId: string, deps: StartEvolutionDeps): Promise<PoolEvolutionRecord> {
  const callers = await admitEvolution(req, keyId, deps);
  const weightVersion = req.weightVersion ?? (await callers.currentVersion(keyId, req.endpoint));
  const quoted = deps.quoting ? await quoteRequest({ pool: req }, deps.quoting) : undefined;
  if (quoted) {
    const key = { id: keyId, ...(deps.quoting?.keyBudgetUsd === undefined ? {} : { budgetUsd: deps.quoting.keyBudgetUsd }) };
    await ensureWithinBudget(quoted, key, req.budget?.usd, deps.quoting!);
  }
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
    progress: { done: 0, total: req.evolution.directions.length * req.evolution.rounds, label: `queued: at most ${plannedEvolutionRollouts(req)} rollouts` },
    usage: zeroEvolutionUsage,
    ...(quoted ? { quote: quoted, tariff: deps.quoting!.tariff } : {}),
  };
  await deps.evolutions.create(record);
  await deps.coordinator.send([envelope("pool.evolve.requested", `pool-evolution:${record.id}`, { evolutionId: record.id }, { keyId, jobId: record.id })]);
  return record;
}
