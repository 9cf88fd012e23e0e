import type { Clock, PoolStore, RolloutStore } from "@harness-s/core";
import type { UsageMeter } from "@harness-s/core/billing";
import type { ProfileLedger, ProfileStore } from "@harness-s/core/profile";
import type { ApiKeyStore, KeyEventLog } from "@harness-s/core/access";
import type { DecisionStore } from "@harness-s/core/routing";
import type { RescueJobStore } from "@harness-s/core/rescue";
import type { PolicyEndpointStore } from "@harness-s/core/callers";
import type { RescueSlots } from "@harness-s/core/dispatch";
import type { BallotStore } from "@harness-s/core/voting";
import type { ExperimentStore, ExperimentStepStore } from "@harness-s/core/experiment";
import type { PoolEvolutionStore } from "@harness-s/core/pools";
import { apiKeyStoreContract } from "./api-keys.contract.ts";
import { ballotStoreContract } from "./ballots.contract.ts";
import { decisionStoreContract } from "./decisions.contract.ts";
import { endpointRecordsContract } from "./endpoints.contract.ts";
import { experimentStepStoreContract } from "./experiment-steps.contract.ts";
import { experimentStoreContract } from "./experiments.contract.ts";
import { poolStoreContract } from "./pools.contract.ts";
import { poolEvolutionStoreContract } from "./pool-evolutions.contract.ts";
import { profileStoreContract } from "./profiles.contract.ts";
import { rescueJobStoreContract } from "./rescue-jobs.contract.ts";
import { rescueSlotsContract } from "./rescue-slots.contract.ts";
import { rolloutStoreContract } from "./rollouts.contract.ts";
import { usageMeterContract } from "./usage-meter.contract.ts";

export interface Stores {
  pools: PoolStore;
  profiles: ProfileStore & ProfileLedger;
  decisions: DecisionStore;
  keys: ApiKeyStore;
  keyEvents: KeyEventLog;
  meter: UsageMeter;
  rollouts: RolloutStore;
  jobs: RescueJobStore;
  ballots: BallotStore;
  experiments: ExperimentStore;
  experimentSteps: ExperimentStepStore;
  endpoints: PolicyEndpointStore;
  rescueSlots: RescueSlots;
  poolEvolutions: PoolEvolutionStore;
}

/** Every port's contract over one set of stores (one file a port beside this one); `fresh` returns empty stores. */
export function storeContract(name: string, fresh: (clock?: Clock) => Promise<Stores>): void {
  poolStoreContract(name, fresh);
  profileStoreContract(name, fresh);
  rolloutStoreContract(name, fresh);
  experimentStepStoreContract(name, fresh);
  ballotStoreContract(name, fresh);
  experimentStoreContract(name, fresh);
  rescueJobStoreContract(name, fresh);
  rescueSlotsContract(name, fresh);
  decisionStoreContract(name, fresh);
  apiKeyStoreContract(name, fresh);
  usageMeterContract(name, fresh);
  endpointRecordsContract(name, fresh);
  poolEvolutionStoreContract(name, fresh);
}
