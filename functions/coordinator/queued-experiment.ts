import { queuedRolloutRunner, type ExperimentDeps, type ExperimentRecord } from "@harness-s/core/experiment";
import { queuedVoter, type BallotStore } from "@harness-s/core/voting";
import { systemClock, type Clock, type Policy, type PoolStore, type RolloutStore } from "@harness-s/core";
import type { MessageQueue } from "@harness-s/core/messaging";

export interface QueuedExperimentWiring {
  pools: PoolStore;
  ballots: BallotStore;
  rollouts: RolloutStore;
  /**
   * Where rollouts go (the dispatch worker); absent: every rollout runs in the coordinator (an environment the dispatch
   * worker does not have: a caller's).
   */
  dispatch?: MessageQueue;
  /** Where ballots go (the vote worker); absent: the setup's voters vote in the coordinator. */
  vote?: MessageQueue;
  clock?: Clock;
  /** Makes `policy` reachable at the policy endpoint and returns its id there. */
  endpointId: (policyId: string, policy: Policy) => string;
}

/**
 * How the coordinator runs an experiment through the queues: each seed's frozen pool is stored
 * in the Pools table as the run's key's own, every rollout is a `rollout.requested` message to `dispatch` (sampled at
 * the policy endpoint), every ballot a `ballot.requested` message to `vote`; without `dispatch`
 * (or `vote`) the rollouts (or ballots) run in the coordinator's own process.
 */
export function queuedExperimentDeps(
  setup: Omit<ExperimentDeps, "onProgress">,
  wiring: QueuedExperimentWiring,
): (record: ExperimentRecord) => Promise<ExperimentDeps> {
  const clock = wiring.clock ?? systemClock;
  return async (record) => {
    const payer = { keyId: record.keyId, jobId: record.id };
    const poolIds = new Map<number, string>();
    for (const seed of record.request.seeds) {
      const inst = await setup.instance(seed);
      const id = `${record.id}/pool/${seed}`;
      // The run's key owns what its run evolves: another key neither lists nor routes in it.
      await wiring.pools.put({ ...inst.evolution.pool, id, owner: record.keyId });
      poolIds.set(seed, id);
    }
    const vote = wiring.vote;
    const voters = vote
      ? setup.voters.map((v) =>
          queuedVoter(v.id, { namespace: record.id, queue: vote, ballots: wiring.ballots, clock, payer }),
        )
      : setup.voters;
    const dispatch = wiring.dispatch;
    if (!dispatch) return { ...setup, voters };
    return {
      ...setup,
      voters,
      runnerFor: (policyId, policy, seed) => {
        const id = wiring.endpointId(`${record.id}/${policyId}`, policy);
        // Slots are numbered per runner; a unit continued by a later attempt gets a new runner, so
        // its job id names the attempt too, or its slots would find the earlier attempt's rollouts.
        return queuedRolloutRunner({
          jobId: `${id}@attempt-${record.attempts}`,
          policyId: id,
          poolId: poolIds.get(seed)!,
          policyVersion: () => policy.version(),
          dispatch,
          rollouts: wiring.rollouts,
          clock,
          payer,
        });
      },
    };
  };
}
