import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { PoolEvolutionRecord, type PoolEvolutionStore } from "@harness-s/core/pools";
import type { TableNames } from "../../dynamo/table-specs.ts";
import { DynamoLeasedJobs } from "../leased-jobs/dynamo.ts";

/** Pool evolution jobs, one item each on `PoolEvolutions`: leased jobs (see {@link DynamoLeasedJobs}). */
export class DynamoPoolEvolutionStore extends DynamoLeasedJobs<PoolEvolutionRecord> implements PoolEvolutionStore {
  constructor(doc: DynamoDBDocumentClient, tables: TableNames) {
    super(doc, tables.PoolEvolutions, PoolEvolutionRecord, "pool evolution");
  }
}
