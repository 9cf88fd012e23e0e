import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { type KeyPage, type KeyPageRequest, listPosition } from "@harness-s/core";
import { ExperimentRecord, type ExperimentStore } from "@harness-s/core/experiment";
import type { TableNames } from "../../dynamo/table-specs.ts";
import { queryByKey } from "../../dynamo/by-key.ts";
import { DynamoLeasedJobs } from "../leased-jobs/dynamo.ts";

/**
 * Experiment records on `Experiments`: leased jobs (see {@link DynamoLeasedJobs}), with the key's
 * list (BY_KEY_INDEX: `keyId`, `listAt`) set once when a run is created, never changed by a save.
 */
export class DynamoExperimentStore extends DynamoLeasedJobs<ExperimentRecord> implements ExperimentStore {
  constructor(doc: DynamoDBDocumentClient, tables: TableNames) {
    super(doc, tables.Experiments, ExperimentRecord, "experiment", (r) => ({
      keyId: r.keyId,
      listAt: listPosition(r.createdAt, r.id),
    }));
  }

  /** The key's runs through BY_KEY_INDEX (eventually consistent: a run just started may show a moment later). */
  async listByKey(keyId: string, page: KeyPageRequest): Promise<KeyPage<ExperimentRecord>> {
    const found = await queryByKey(this.doc, this.table, "list experiments", keyId, page);
    return { ...found, items: found.items.map((item) => this.recordOf(item)) };
  }
}
