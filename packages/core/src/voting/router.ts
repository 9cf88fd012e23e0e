/* Invariants: see ./README.md. */
import { z } from "zod";
import { InvalidBallotError, QuorumError, VoterTimeoutError } from "./errors.ts";
import type { VoterSpend } from "../billing/metering.ts";
import type { HarnessSpec } from "../harness/spec.ts";
import { profileOf, type ProfileSet } from "../profile/profile.ts";
import type { TaskView } from "../task.ts";
import type { Clock } from "../util/clock.ts";
import type { Rng } from "../util/rng.ts";
import { AggregatorName, aggregate } from "./aggregate.ts";
import { Ballot, type BallotRequest, type Voter } from "./ballot.ts";
import { DEFAULT_TOP_K, TopK } from "./top-k.ts";

export const RouterOptions = z
  .object({
    k: TopK.default(DEFAULT_TOP_K),
    aggregator: AggregatorName.default("borda"),
    /** Minimum valid ballots; defaults to a majority of the voters. */
    quorum: z.number().int().min(1).optional(),
    exploration: z.number().min(0).max(1).default(0),
    /** Take at most one sibling per repair direction into the Top-k while others remain. */
    diverse: z.boolean().default(false),
    voterTimeoutMs: z.number().int().positive().optional(),
    /** Each voter's weight in the aggregation (default 1; a panel's weights). */
    weights: z.record(z.string(), z.number().positive()).optional(),
  })
  .brand<"RouterOptions">();
export type RouterOptions = z.infer<typeof RouterOptions>;
export type RouterOptionsInput = z.input<typeof RouterOptions>;

/**
 * Router options parsed once (at a composition root, or once per decision site): the branded
 * type is what {@link route} takes, so a value that reaches it has been checked exactly once.
 *
 * @example
 * const options = routerOptions({ k: 2, quorum: 2 }); // throws a ZodError naming a bad field
 * await route(input, options, deps);
 */
export const routerOptions = (options: z.input<typeof RouterOptions>): RouterOptions => RouterOptions.parse(options);

/** Parsed options with another `k` (checked against {@link TopK}). */
export const withTopK = (options: RouterOptions, k: number): RouterOptions =>
  ({ ...options, k: TopK.parse(k) }) as RouterOptions;

export const RoutingDecision = z.object({
  id: z.string(),
  task: z.object({ id: z.string(), family: z.string(), tags: z.array(z.string()) }),
  failureTags: z.array(z.string()),
  failedEvents: z.array(z.string()),
  chosen: z.array(z.string()),
  ranked: z.array(z.object({ harnessId: z.string(), score: z.number(), firstPlaces: z.number() })),
  ballots: z.array(Ballot),
  /** Voters that did not answer: an explicit abstention, by kind (timeout, malformed answer, error). */
  failures: z.array(
    z.object({
      voterId: z.string(),
      reason: z.string(),
      kind: z.enum(["timeout", "malformed", "error"]).optional(),
      /** Tokens the abstaining voter spent (a malformed answer and its retry), metered like a ballot's. */
      usage: z.object({ promptTokens: z.number().int().min(0), completionTokens: z.number().int().min(0) }).optional(),
      costUsd: z.number().min(0).optional(),
    }),
  ),
  /** Set when too few panel voters answered and the statistical voters decided instead. */
  fellBack: z.boolean().optional(),
  /** Set when the decision was served from the decision cache: the id of the decision that voted. */
  cachedFrom: z.string().optional(),
  aggregator: AggregatorName,
  explored: z.boolean(),
  poolVersion: z.string(),
  profileVersions: z.record(z.string(), z.number()),
  /** The API key that asked for it, when it came through the API (only that key may read it back). */
  keyId: z.string().optional(),
});
export type RoutingDecision = z.infer<typeof RoutingDecision>;

export interface RouteInput {
  decisionId: string;
  task: TaskView;
  failureTags?: string[];
  failedEvents?: string[];
  candidates: HarnessSpec[];
  profiles: ProfileSet;
  poolVersion: string;
}

export interface RouterDeps {
  voters: readonly Voter[];
  rng: Rng;
  clock?: Clock;
  /**
   * Voters that decide when fewer than the quorum answered (a panel's `onQuorumMiss: "statistical"`); without them that
   * is a QuorumError.
   */
  fallback?: readonly Voter[];
  /** Told of every voter call's spend as it happens (metering: what a decision cost, whatever its outcome). */
  onSpend?: (spent: VoterSpend) => void;
}

/** Why a voter did not answer, as the decision records it. */
const failureKind = (err: unknown): "timeout" | "malformed" | "error" =>
  err instanceof VoterTimeoutError ? "timeout" : err instanceof InvalidBallotError ? "malformed" : "error";

/** Every voter's ballot at once; the ones that answered, and why the others did not. */
async function collectBallots(voters: readonly Voter[], req: BallotRequest, deps: RouterDeps, timeoutMs?: number) {
  const settled = await Promise.allSettled(voters.map((v) => collectBallot(v, req, deps, timeoutMs)));
  const ballots: Ballot[] = [];
  const failures: RoutingDecision["failures"] = [];
  settled.forEach((s, i) => {
    if (s.status === "fulfilled") ballots.push(s.value);
    else {
      const spent = s.reason instanceof InvalidBallotError ? s.reason.spent : undefined;
      failures.push({
        voterId: voters[i]!.id,
        reason: s.reason instanceof Error ? s.reason.message : String(s.reason),
        kind: failureKind(s.reason),
        ...spent,
      });
    }
  });
  return { ballots, failures };
}

/**
 * One voter's ballot, checked. Its spend reaches `deps.onSpend`: as the voter reports it, or, for a
 * voter that reports none that way, from the ballot or abstention it returns.
 */
async function collectBallot(voter: Voter, req: BallotRequest, deps: RouterDeps, timeoutMs?: number): Promise<Ballot> {
  let reported = false;
  const onSpend = (spent: VoterSpend) => {
    reported = true;
    deps.onSpend?.(spent);
  };
  try {
    const ballot = await checkedBallot(voter, req, deps, onSpend, timeoutMs);
    if (!reported && ballot.usage)
      onSpend({ usage: ballot.usage, ...(ballot.costUsd !== undefined ? { costUsd: ballot.costUsd } : {}) });
    return ballot;
  } catch (err) {
    if (!reported && err instanceof InvalidBallotError && err.spent) onSpend(err.spent);
    throw err;
  }
}

async function checkedBallot(
  voter: Voter,
  req: BallotRequest,
  deps: RouterDeps,
  onSpend: (spent: VoterSpend) => void,
  timeoutMs?: number,
): Promise<Ballot> {
  // At the deadline the vote is aborted as well as given up: a voter's request stops, download and all.
  const abort = new AbortController();
  const pending = voter.vote(req, { signal: abort.signal, onSpend });
  const raw =
    timeoutMs === undefined || !deps.clock
      ? await pending
      : await Promise.race([
          pending,
          deps.clock.sleep(timeoutMs).then(() => {
            const timedOut = new VoterTimeoutError(voter.id, timeoutMs);
            abort.abort(timedOut);
            throw timedOut;
          }),
        ]);
  const parsed = Ballot.safeParse(raw);
  if (!parsed.success) throw new InvalidBallotError(voter.id, parsed.error.issues.map((i) => i.message).join("; "));
  const ids = new Set(req.candidates.map((c) => c.id));
  const { usage, costUsd } = parsed.data;
  const spent = usage ? { spent: { usage, ...(costUsd !== undefined ? { costUsd } : {}) } } : {};
  const unknown = parsed.data.ranking.filter((id) => !ids.has(id));
  if (unknown.length) throw new InvalidBallotError(voter.id, `unknown harnesses ${unknown.join(", ")}`, spent);
  if (new Set(parsed.data.ranking).size !== parsed.data.ranking.length)
    throw new InvalidBallotError(voter.id, "duplicate ids", spent);
  return { ...parsed.data, voterId: voter.id };
}

/**
 * Ranks the candidates for one task by a vote and picks the Top-k.
 *
 * @example
 * const decision = await route({ decisionId: "d1", task, candidates: pool.siblings, profiles, poolVersion: pool.version },
 *   routerOptions({ k: 2 }), { voters: statisticalVoters, rng });
 * decision.chosen; // e.g. ["sib/recovery-1", "sib/contract-2"]
 */
export async function route(input: RouteInput, opts: RouterOptions, deps: RouterDeps): Promise<RoutingDecision> {
  const req: BallotRequest = {
    decisionId: input.decisionId,
    task: input.task,
    failureTags: input.failureTags ?? [],
    failedEvents: input.failedEvents ?? [],
    candidates: input.candidates,
    profiles: input.profiles,
    k: opts.k,
  };
  let { ballots, failures } = await collectBallots(deps.voters, req, deps, opts.voterTimeoutMs);
  const quorum = opts.quorum ?? Math.max(1, Math.ceil(deps.voters.length / 2));
  let fellBack = false;
  if (ballots.length < quorum) {
    if (!deps.fallback?.length) throw new QuorumError(ballots.length, quorum, failures);
    const fallback = await collectBallots(deps.fallback, req, deps, opts.voterTimeoutMs);
    if (!fallback.ballots.length) throw new QuorumError(ballots.length, quorum, [...failures, ...fallback.failures]);
    ({ ballots } = fallback);
    failures = [...failures, ...fallback.failures];
    fellBack = true;
  }

  const ranked = aggregate(
    ballots,
    input.candidates.map((c) => c.id),
    opts.aggregator,
    fellBack ? {} : (opts.weights ?? {}),
  );
  const chosen = opts.diverse
    ? diverseTopK(
        ranked.map((t) => t.harnessId),
        input.candidates,
        opts.k,
      )
    : ranked.slice(0, opts.k).map((t) => t.harnessId);
  let explored = false;
  if (opts.exploration > 0 && deps.rng.next() < opts.exploration && ranked.length > chosen.length) {
    const others = ranked.map((t) => t.harnessId).filter((id) => !chosen.includes(id));
    chosen[chosen.length - 1] = others[deps.rng.int(others.length)]!;
    explored = true;
  }
  return {
    id: input.decisionId,
    task: { id: input.task.id, family: input.task.family, tags: input.task.tags },
    failureTags: req.failureTags,
    failedEvents: req.failedEvents,
    chosen,
    ranked,
    ballots,
    failures,
    ...(fellBack ? { fellBack } : {}),
    aggregator: opts.aggregator,
    explored,
    poolVersion: input.poolVersion,
    profileVersions: Object.fromEntries(
      input.candidates.map((c) => [c.id, profileOf(input.profiles, c.id)?.policyVersion ?? -1]),
    ),
  };
}

/** The best-ranked candidate of each direction first, in rank order, then the rest. */
function diverseTopK(order: readonly string[], candidates: readonly HarnessSpec[], k: number): string[] {
  const direction = new Map(candidates.map((c) => [c.id, c.provenance.direction]));
  const seen = new Set<string>();
  const firsts = order.filter((id) => {
    const d = direction.get(id)!;
    if (seen.has(d)) return false;
    seen.add(d);
    return true;
  });
  return [...firsts, ...order.filter((id) => !firsts.includes(id))].slice(0, k);
}
