import { NotConfiguredError } from "../errors.ts";
import { ownedBy } from "../access/keys.ts";
import type { PoolHarm } from "../evolution/evolve.ts";
import type { HarnessPool } from "../harness/pool.ts";
import { TrainConfig } from "../training/config.ts";
import { consoleLogger, type Logger } from "../util/logger.ts";
import {
  ArtifactNotFoundError,
  REPORT_ARTIFACT,
  contentTypeOf,
  type ArtifactName,
  type ExperimentArtifact,
  type ExperimentArtifacts,
} from "./artifacts.ts";
import { ExperimentConfig, type ExperimentDeps, type SeedInstance } from "./experiment-config.ts";
import { envName } from "./environment.ts";
import { evalSet } from "./unit.ts";
import { TERMINAL_STATES, type ExperimentRecord, type ExperimentStore } from "./records.ts";
import { summarise } from "./summarise.ts";
import type { ArmSeedResult, ExperimentSummary } from "./summary.ts";

/** Each seed's frozen pool with its siblings' side effects on dev, as the CLI's `pools.json` keeps them. */
export type SeedPools = Record<string, HarnessPool & { harm?: PoolHarm }>;

/** What a run's report and plots are rendered from. */
export interface ReportInput {
  summary: ExperimentSummary;
  pools?: SeedPools;
  /** A line shown under the title (a stopped run's: its figures cover the units it finished). */
  note?: string;
  /** What the title names: the run's environment and the model it trained (none: the environment's own policy). */
  title?: { env: string; model?: string };
  /** The family's own section the report ends with (DBBench's), as the CLI's report ends with it. */
  section?: string;
}

/**
 * The report's title, and its family's section from the seeds' evaluated held-out tasks (the first seed's, as the
 * CLI's).
 */
async function titledInput(
  record: ExperimentRecord,
  input: ReportInput,
  instance: (seed: number) => Promise<SeedInstance>,
  section?: ExperimentDeps["reportSection"],
): Promise<ReportInput> {
  const title = {
    env: envName(record.request.env),
    ...(record.request.model !== undefined ? { model: record.request.model } : {}),
  };
  if (!section) return { ...input, title };
  const config = ExperimentConfig.parse({ ...record.request, train: TrainConfig.parse(record.request.train) });
  const evaluated = evalSet(config, (await instance(input.summary.seeds[0]!)).heldout);
  return { ...input, title, section: section(input.summary, record.baselines, evaluated) };
}

/** Renders a run's report and plots (the CLI's code: `@harness-s/adapters/report`). */
export type ExperimentReportRenderer = (input: ReportInput) => Promise<{ name: ArtifactName; bytes: Uint8Array }[]>;

export interface PublishReportDeps {
  artifacts: ExperimentArtifacts;
  render: ExperimentReportRenderer;
  logger?: Logger;
}

/** A stopped run's configuration cut to the seeds and arms that finished a unit; undefined when none did. */
function finishedPart(record: ExperimentRecord): ExperimentConfig | undefined {
  const has = (seed: number) =>
    record.baselines.some((b) => b.seed === seed) && record.results.some((r) => r.result.seed === seed);
  const seeds = record.request.seeds.filter(has);
  const arms = record.request.arms.filter((a) =>
    record.results.some((r) => r.arm === a && seeds.includes(r.result.seed)),
  );
  if (!seeds.length || !arms.length) return undefined;
  const parsed = ExperimentConfig.safeParse({
    ...record.request,
    seeds,
    arms,
    train: TrainConfig.parse(record.request.train),
  });
  return parsed.success ? parsed.data : undefined;
}

/**
 * What a run's report is made of: a done run's summary, or for a run stopped at its budget cap the
 * summary of the (arm, seed) units it finished, with each seed's pool; undefined for a run with
 * nothing to report (failed, cancelled, or stopped before any unit finished).
 */
export async function reportInputOf(
  record: ExperimentRecord,
  instance: (seed: number) => Promise<SeedInstance>,
): Promise<ReportInput | undefined> {
  const config = record.status === "done" ? undefined : record.status === "stopped" ? finishedPart(record) : undefined;
  if (!config && record.status !== "done") return undefined;
  const seeds = config?.seeds ?? record.request.seeds;
  const instances = new Map(await Promise.all(seeds.map(async (seed) => [seed, await instance(seed)] as const)));
  const pools: SeedPools = Object.fromEntries(
    [...instances].map(([seed, inst]) => [String(seed), { ...inst.evolution.pool, harm: inst.evolution.harm }]),
  );
  if (!config) return record.summary ? { summary: record.summary, pools } : undefined;
  const perArm = new Map<string, ArmSeedResult[]>(
    config.arms.map((a) => [
      a,
      record.results.filter((r) => r.arm === a && seeds.includes(r.result.seed)).map((r) => r.result),
    ]),
  );
  const summary = summarise(config, {
    perArm,
    baselines: record.baselines.filter((b) => seeds.includes(b.seed)),
    instances,
  });
  const units = [...perArm.values()].reduce((n, rs) => n + rs.length, 0);
  const note = `Stopped before its end (${record.stopReason ?? "stopped"}): figures cover the ${units} of ${record.request.arms.length * record.request.seeds.length} (arm, seed) units it finished.`;
  return { summary, pools, note };
}

/**
 * Renders a run's report and plots and stores them beside it; the names stored. Never throws: a
 * run's results are kept whatever happens here (a failure is logged, and the report route then
 * answers 404 saying the run has no report).
 */
export async function publishExperimentReport(
  record: ExperimentRecord,
  instance: (seed: number) => Promise<SeedInstance>,
  deps: PublishReportDeps,
  section?: ExperimentDeps["reportSection"],
): Promise<ArtifactName[]> {
  try {
    const input = await reportInputOf(record, instance);
    if (!input) return [];
    const files = await deps.render(await titledInput(record, input, instance, section));
    for (const f of files) await deps.artifacts.put(record.id, f.name, f.bytes, contentTypeOf(f.name));
    return files.map((f) => f.name);
  } catch (err) {
    (deps.logger ?? consoleLogger).warn(
      `the report of experiment ${record.id} was not stored: ${err instanceof Error ? err.message : String(err)}`,
    );
    return [];
  }
}

export interface ArtifactReadDeps {
  experiments: ExperimentStore;
  /** None: this deployment keeps no reports (NOT_CONFIGURED). */
  artifacts?: ExperimentArtifacts;
}

function artifactsOf(deps: ArtifactReadDeps): ExperimentArtifacts {
  if (!deps.artifacts)
    throw new NotConfiguredError("this deployment keeps no experiment reports (no artifact store is configured)");
  return deps.artifacts;
}

/** The run if `key` may read it (its own, or any for an admin); another key's run is not found. */
async function visibleRun(
  id: string,
  key: { id: string; scopes: readonly string[] },
  deps: Pick<ArtifactReadDeps, "experiments">,
): Promise<ExperimentRecord> {
  return ownedBy(deps.experiments, key, "experiment").get(id);
}

/** Why a visible run has no such artifact, in words a caller can act on. */
function missingBecause(record: ExperimentRecord, name: ArtifactName): string {
  if (!TERMINAL_STATES.includes(record.status))
    return `experiment "${record.id}" is ${record.status}: its report and plots are made when it ends`;
  const what = name === REPORT_ARTIFACT ? "no report" : `no plot ${name}`;
  return `experiment "${record.id}" ended ${record.status} with ${what} (a report is made for a run that ends done, or stopped with finished units; if it should have one, making it failed: see the coordinator's log)`;
}

/**
 * `GET /v1/experiments/{id}/report` and `…/plots/{file}`: the artifact of a run the key may read.
 * Another key's run is a NotFoundError; a missing artifact an ArtifactNotFoundError saying why.
 */
export async function experimentArtifact(
  id: string,
  name: ArtifactName,
  key: { id: string; scopes: readonly string[] },
  deps: ArtifactReadDeps,
): Promise<ExperimentArtifact> {
  const record = await visibleRun(id, key, deps);
  const found = await artifactsOf(deps).get(record.id, name);
  if (!found) throw new ArtifactNotFoundError(missingBecause(record, name));
  return found;
}

/** `GET /v1/experiments/{id}/plots`: the file names of a run's plots (none until it ends with a report). */
export async function experimentPlots(
  id: string,
  key: { id: string; scopes: readonly string[] },
  deps: ArtifactReadDeps,
): Promise<{ record: ExperimentRecord; plots: ArtifactName[] }> {
  const record = await visibleRun(id, key, deps);
  const plots = (await artifactsOf(deps).list(record.id)).filter((n) => n.endsWith(".png"));
  return { record, plots };
}
