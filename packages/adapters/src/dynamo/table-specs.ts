// Dependency-free so that the SST stacks can import it.
/** One table: the single source of truth for the SST stacks and the local runtime. */
export interface TableSpec {
  /** Logical name; the physical name is `${prefix}${name}` locally and chosen by SST in the cloud. */
  name:
    | "Pools"
    | "Profiles"
    | "Decisions"
    | "ApiKeys"
    | "Keys"
    | "KeyEvents"
    | "Usage"
    | "Processed"
    | "Rollouts"
    | "RescueJobs"
    | "Ballots"
    | "Experiments"
    | "ExperimentSteps"
    | "PolicyEndpoints"
    | "GatewayEpisodes"
    | "UsageDays"
    | "PoolEvolutions"
    | "RunningPlaces";
  partitionKey: string;
  sortKey?: string;
  ttlAttribute?: string;
  /** Global secondary indexes (every attribute projected), string keys. */
  indexes?: readonly IndexSpec[];
}

/** A global secondary index of a table: the stacks and the local runtime create it from this. */
export interface IndexSpec {
  name: string;
  partitionKey: string;
  sortKey: string;
}

/**
 * A key's runs newest first: partition `keyId`, sort key `listAt` (`listPosition(createdAt, id)`
 * of @harness-s/core). An item without `keyId` is in no key's list (the index is sparse).
 */
export const BY_KEY_INDEX = { name: "byKey", partitionKey: "keyId", sortKey: "listAt" } as const satisfies IndexSpec;

export const tableSpecs: readonly TableSpec[] = [
  { name: "Pools", partitionKey: "id" },
  { name: "Profiles", partitionKey: "poolId", sortKey: "harnessId" },
  { name: "Decisions", partitionKey: "id", ttlAttribute: "expiresAt" },
  /** Each API key secret's hash, pointing at its key (`{ hash, id }`). */
  { name: "ApiKeys", partitionKey: "hash" },
  /** API keys by id: settings, secrets' hashes, revocation, written under a version. */
  { name: "Keys", partitionKey: "id" },
  /** Each key's operations (created, updated, rotated, revoked): sort key the key's version each wrote (10 digits). */
  { name: "KeyEvents", partitionKey: "keyId", sortKey: "sk" },
  /** Usage totals per key, and per experiment under `job#<id>` (never an API key's id: `#` is not in one). */
  { name: "Usage", partitionKey: "keyId" },
  /** Usage per key and UTC day (sort key `YYYY-MM-DD`), written with the totals in one transaction. */
  { name: "UsageDays", partitionKey: "keyId", sortKey: "day" },
  /** Ids of queue messages already applied (idempotent consumers); expire after a week. */
  { name: "Processed", partitionKey: "id", ttlAttribute: "expiresAt" },
  /** Rollouts by job; sort key `<index>#<chunk>` (gzip, chunked below the 400 KB item limit). */
  { name: "Rollouts", partitionKey: "jobId", sortKey: "part" },
  /** Rescue jobs; each key's newest first through {@link BY_KEY_INDEX}. */
  { name: "RescueJobs", partitionKey: "id", indexes: [BY_KEY_INDEX] },
  /** One voter's ballot per routing decision (cast by the vote worker); expire with the decisions. */
  { name: "Ballots", partitionKey: "ballotKey", sortKey: "voterId", ttlAttribute: "expiresAt" },
  /**
   * Experiment runs: state and lease as attributes, the rest of the record gzip-compressed; each key's newest first
   * through {@link BY_KEY_INDEX}.
   */
  { name: "Experiments", partitionKey: "id", indexes: [BY_KEY_INDEX] },
  /** One item per training step of a run: sort key `<seed>#<arm>#<step>`, the groups inside. */
  { name: "ExperimentSteps", partitionKey: "experimentId", sortKey: "key" },
  /** The policy endpoints each key registered (its secret header inside; never returned). */
  { name: "PolicyEndpoints", partitionKey: "keyId", sortKey: "id" },
  /**
   * Gateway episodes by key: sort key `ep#<id>#m` (meta), `…#i#<c>` (opening), `…#s#<n>#<c>` (steps),
   * `open#<opening>#<t>#<id>` (index).
   */
  { name: "GatewayEpisodes", partitionKey: "keyId", sortKey: "sk", ttlAttribute: "expiresAt" },
  /**
   * Pool evolution jobs (`POST /v1/pools` with `evolve`): state and lease as attributes, the record gzip-compressed.
   */
  { name: "PoolEvolutions", partitionKey: "id" },
  /**
   * Each key's running places for its callers' rollouts: sort key the place (`00`…`31`), its holder's lease inside
   * (`holder`, `until`); a lapsed lease is taken over, and forgotten by its time to live.
   */
  { name: "RunningPlaces", partitionKey: "keyId", sortKey: "place", ttlAttribute: "expiresAt" },
];

export type TableNames = Record<TableSpec["name"], string>;

export function tableNames(prefix: string): TableNames {
  return Object.fromEntries(tableSpecs.map((t) => [t.name, `${prefix}${t.name}`])) as TableNames;
}
