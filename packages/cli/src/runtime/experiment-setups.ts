import { ValidationError } from "@harness-s/core";
import {
  TERMINAL_STATES,
  type ExperimentDeps,
  type ExperimentOffers,
  type ExperimentRecord,
} from "@harness-s/core/experiment";
import type { OutboundPolicy } from "@harness-s/adapters/net";
import {
  embeddedRendering,
  plainIo,
  renderingOf,
  type FamilyIo,
  type FamilyRendering,
  type SetupForProtocol,
} from "@harness-s/envs";
import { familyFor } from "../families.ts";
import type { Stores } from "@harness-s/functions/local";
import type { UsageReport } from "@harness-s/functions/experiment-setup";
import { callerEnvSetup } from "@harness-s/functions/experiment-setup";
import { trainedAtWorker, type ModelAtWorker } from "@harness-s/functions/experiment-setup";

type Setup = Omit<ExperimentDeps, "onProgress">;

/**
 * What a stack runs experiments on besides the embedded suite: the families it opens (with the options each opens
 * with), and its policy worker.
 */
export interface ExperimentSetupsOptions {
  /** The embedded suite's setup per protocol (a run on it without a model: the suite's own CPU policy, as before). */
  embedded: SetupForProtocol;
  /**
   * The families this stack opens for a run, each with its options as the CLI's flags give them (DBBench: `{ engine:
   * "sqlite" }`).
   */
  families?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /**
   * The base models language-model policies train on, each at its worker (the first is a run's default); none: only the
   * embedded suite with its own policy runs.
   */
  models?: readonly ModelAtWorker[];
  /** What a caller's environment may resolve to (the stack's outbound guard). */
  outbound: OutboundPolicy;
  io?: FamilyIo;
  /** How often the runs holding an opened environment are read, to stop it once the run has ended. */
  watchMs?: number;
}

/**
 * The families `serve` opens for experiments, each with the options it opens with: DBBench on
 * SQLite, AppWorld and SWE-Gym at local fixture servers started per run (as `experiment --env`
 * starts them), stopped when the run ends.
 */
export const SERVE_EXPERIMENT_FAMILIES: Readonly<Record<string, Readonly<Record<string, unknown>>>> = {
  dbbench: { engine: "sqlite" },
  appworld: { appworldServers: 2 },
  "swe-gym": {},
};

/** How often an opened environment's run is read by default. */
export const RUN_WATCH_MS = 1_000;

/**
 * What a stack with these setups offers (`POST /v1/experiments` refuses anything else with a 400):
 * the embedded suite, each family it opens whose runs it can train (a language-model family needs
 * the worker), a caller's own environment where there is a worker, and the worker's models.
 */
export function experimentOffers(opts: Pick<ExperimentSetupsOptions, "families" | "models">): ExperimentOffers {
  const models = (opts.models ?? []).map((m) => m.name);
  const trainable = Object.keys(opts.families ?? {}).filter(
    (name) => models.length > 0 || familyFor(name, "experiment").policy === "own",
  );
  return {
    envs: ["embedded", ...trainable.filter((n) => n !== "embedded")],
    callerEnvironments: models.length > 0,
    models,
  };
}

interface OpenedRun {
  setup: Setup;
  stop: () => Promise<void>;
}

/**
 * Each run's setup from its record: the embedded suite without a model as before (nothing opened);
 * a family opened through the registry, or the caller's own OpenEnv server, once per run (every
 * attempt of the run shares it) and stopped once the run has ended (done, stopped, failed or
 * cancelled), or when opening it failed; a language model's policies trained at the worker.
 *
 * @example
 * const setups = new ExperimentSetups({ embedded: embeddedSetups(defaultEmbeddedSettings), families: { dbbench: { engine: "sqlite" } }, models: [{ name: "tiny", url }], outbound });
 * localQueuedExperiment(setups, new RunPolicyEndpoints(env));
 */
export class ExperimentSetups {
  private readonly opened = new Map<string, Promise<OpenedRun>>();
  private watching?: ReturnType<typeof setInterval>;

  constructor(private readonly opts: ExperimentSetupsOptions) {}

  /**
   * `meter` hears what the run's policy worker spent (GPU seconds, tokens sampled and trained), in the scope of the
   * record that spent it.
   */
  forRun = async (record: ExperimentRecord, stores: Stores, meter?: UsageReport): Promise<Setup> => {
    const req = record.request;
    if (req.env === "embedded" && req.model === undefined) return this.opts.embedded(req.protocol);
    let run = this.opened.get(record.id);
    if (!run) {
      run = this.open(record, stores, meter);
      this.opened.set(record.id, run);
      this.watch(stores);
      run.catch(() => this.opened.delete(record.id));
    }
    return (await run).setup;
  };

  /** Stops every environment still open (the stack is stopping). */
  async stopAll(): Promise<void> {
    clearInterval(this.watching);
    this.watching = undefined;
    const runs = [...this.opened.values()];
    this.opened.clear();
    await Promise.all(runs.map((r) => r.then((o) => o.stop()).catch(() => undefined)));
  }

  /** Runs whose environment is open now (their ids). */
  openRuns(): string[] {
    return [...this.opened.keys()];
  }

  private async open(record: ExperimentRecord, stores: Stores, meter?: UsageReport): Promise<OpenedRun> {
    const env = record.request.env;
    if (typeof env !== "string") {
      const opened = await callerEnvSetup(env, record, {
        outbound: this.opts.outbound,
        pools: stores.pools,
        profiles: stores.profiles,
        withPolicy: (base, rendering) => this.withWorker(base, rendering, record, meter),
      });
      return { setup: opened.base, stop: opened.stop };
    }
    if (env === "embedded")
      return {
        setup: this.withWorker(this.opts.embedded(record.request.protocol), embeddedRendering, record, meter),
        stop: async () => undefined,
      };
    const options = this.opts.families?.[env];
    if (!options) throw new ValidationError("env", [`this stack runs no experiments on ${env}`]);
    const family = familyFor(env, "experiment");
    const opened = await family.open({
      command: "experiment",
      options,
      protocol: record.request.protocol,
      io: this.opts.io ?? plainIo,
    });
    try {
      const trained = family.policy === "worker" || record.request.model !== undefined;
      // The family's own report section (DBBench's) ends the run's report, as the CLI's.
      const base = opened.reportSection ? { ...opened.base, reportSection: opened.reportSection } : opened.base;
      return { setup: trained ? this.withWorker(base, renderingOf(family), record, meter) : base, stop: opened.stop };
    } catch (err) {
      await opened.stop();
      throw err;
    }
  }

  /**
   * The setup with its policies at a worker: the run's model (default the first served) on the environment's token
   * rendering.
   */
  private withWorker(base: Setup, rendering: FamilyRendering, record: ExperimentRecord, meter?: UsageReport): Setup {
    return trainedAtWorker(base, rendering, record, { served: this.opts.models ?? [], ...(meter ? { meter } : {}) });
  }

  /** Reads the runs holding an environment every `watchMs`; one that has ended gets it stopped. */
  private watch(stores: Stores): void {
    this.watching ??= setInterval(() => void this.stopEnded(stores), this.opts.watchMs ?? RUN_WATCH_MS);
    this.watching.unref?.();
  }

  private async stopEnded(stores: Stores): Promise<void> {
    for (const [id, run] of this.opened) {
      const record = await stores.experiments.get(id).catch(() => undefined);
      if (!record || !TERMINAL_STATES.includes(record.status)) continue;
      this.opened.delete(id);
      await run.then((o) => o.stop()).catch(() => undefined);
    }
    if (this.opened.size === 0) {
      clearInterval(this.watching);
      this.watching = undefined;
    }
  }
}
