import { existsSync } from "node:fs";
import { Command, CommanderError, Option, type OutputConfiguration } from "commander";
import { ZodError } from "zod";
import { HarnessSError, armNames, formatIssues } from "@harness-s/core";
import { BUNDLED_DATA_DIR } from "@harness-s/dbbench";
import { SuiteLmRecipe } from "./suite-lm/recipe.ts";
import { DEFAULT_CANDIDATES } from "./tuning/rule.ts";
import { defaultEmbeddedSettings } from "@harness-s/envs";
import { UsageError, parseFlags } from "./flags.ts";
import { remoteEnvOf, withRemoteEnvOptions } from "./remote-env-flags.ts";
import {
  BenchFlags,
  ConfirmFlags,
  DbbenchEvalFlags,
  DbbenchVerifyFlags,
  EvolveFlags,
  ExperimentFlags,
  PolicyServeFlags,
  PolicyWorkerFlags,
  policyServeDefaults,
  ReportFlags,
  EnvServeFlags,
  EnvEvalFlags,
  FixturesServeFlags,
  ServeFlags,
  SuiteLmFlags,
  TuneFlags,
} from "./command-flags.ts";

/** Where the CLI writes: the process's streams, or a test's buffers. */
export interface CliOutput {
  writeOut: (text: string) => void;
  writeErr: (text: string) => void;
}

const processOutput: CliOutput = { writeOut: (t) => process.stdout.write(t), writeErr: (t) => process.stderr.write(t) };

/**
 * The harness-s command line as a commander program (built afresh per run: commander keeps the
 * parsed values on it). Commands load their implementation when they run, so that help and flag
 * errors answer at once.
 */
export function buildProgram(output: OutputConfiguration = processOutput): Command {
  const program = new Command()
    .name("harness-s")
    .description("Selective harness rescue for GRPO agent training, and the harness router.")
    .showHelpAfterError()
    .exitOverride()
    .configureOutput(output);

  const experiment = program
    .command("experiment")
    .description("Train every arm over several seeds on the embedded suite; write summary.json, report.md and plots")
    .option("--seeds <list>", "seeds: comma-separated integers and ranges, e.g. 1,2,3 or 1-25 (default: 1-5, or 1-3 with --quick)")
    .option("--arms <list>", `arms to run, comma-separated (default: all of ${armNames().join(", ")})`)
    .option("--out <dir>", "output folder (default results/<timestamp>)")
    .option("--quick", "a smoke run: 3 seeds, 10 steps, fewer evaluation samples", false)
    .option(
      "--sweep [kinds]",
      "also run sweeps: cue (the default: harness-s − grpo-budget over H0 cue rate and cue strength), router (harness-s − harness-s-random over pool size, k and side effects), reanchor (harness-s − harness-s-noreanchor as hints fade); comma-separated",
    )
    .option("--side-effects <p>", "how often a sibling's edit misleads outside its area: per task and absent requirement, the chance its remedy spoils the episode (0: never)")
    .option("--cue-half-life <steps>", "updates over which the policy's hint bonus halves (default: fixed)")
    .option("--pool-size <n>", "siblings evolution keeps (default 8)")
    .option("--steps <n>", "training steps per arm")
    .option("--train <json>", 'overrides of the training config as JSON, e.g. \'{"k":3,"batchSize":24}\'')
    .option("--cue-rate <r>", "share of train tasks whose instruction cues their latent requirements", String(defaultEmbeddedSettings.cueRate))
    .option("--cue-strength <b>", "the policy's fixed logit bonus for a hinted action", String(defaultEmbeddedSettings.cueStrength))
    .option("--fixed-suite", "run every seed on one suite instance and pool (default: each seed is an independent replicate)", false)
    .addOption(
      new Option(
        "--protocol <p>",
        "test: evaluate on the held-out split; validation: hold the train pair a+b back and evaluate on it instead (for tuning; no held-out task is built)",
      )
        .choices(["test", "validation"])
        .default("test"),
    )
    .option("--resume", "continue the run in --out from its checkpoint.json (finished seeds and arms are not run again)", false)
    .addOption(
      new Option("--runtime <r>", "in-process, or local-aws: through DynamoDB Local, fauxqs and the same Lambda handlers (same summary for the same seeds)")
        .choices(["in-process", "local-aws"])
        .default("in-process"),
    )
    .addOption(
      new Option("--policy <p>", "embedded (the log-linear CPU policy), or worker: an LLM at a protocol-v2 policy worker (--policy-url) on the suite's text rendering")
        .choices(["embedded", "worker"])
        .default("embedded"),
    )
    .option("--policy-url <url>", "the policy worker (see `harness-s policy-worker`); without it, one is started here on <out>/worker with --policy-model")
    .option("--policy-token <t>", "the worker's bearer token")
    .option(
      "--policy-model <name>",
      "what the worker serves: tiny (random weights, for smoke runs), suite-lm (the suite LM, built or found in --model-cache), or a model directory; with --policy-url, the name it serves",
      "tiny",
    )
    .addOption(new Option("--suite-lm-size <s>", "the suite LM's size (see `harness-s suite-lm build`)").choices(["toy", "small", "base", "large"]).default("small"))
    .option("--model-cache <dir>", "where suite LMs are kept, by recipe hash", ".harness-s/models")
    .option("--policy-lr <lr>", "AdamW learning rate of the worker's LoRA adapters (3e-3: the suite LM learns without collapsing, docs/token-level.md)", String(3e-3))
    .option("--policy-max-tokens <n>", "most tokens the worker samples per turn", String(24))
    .option("--constrained-calls", "with --policy worker: each turn is sampled (and trained) as exactly one call of an offered tool, its arguments fitting the tool's schema")
    .option("--policy-max-in-flight <n>", "most samples the worker is sent concurrently; the rest wait in the client, so none times out queued", String(32))
    .option("--eval-tasks <n>", "evaluate at most n tasks per split (evenly spaced): for slow policies; default every task")
    .option("--eval-samples <n>", "attempts per task in every evaluation (default 6, or 3 with --quick)")
    .option(
      "--profile-budget <n>",
      "with --policy worker: rollouts per seed for measuring the pool's initial profiles with the token policy (default: every dev task under H0, and every sibling where H0 fails)",
    )
    .option("--voters <file>", "a voter panel (JSON: statistical and OpenAI-compatible LLM voters, weights, quorum) the router arms decide with; default the statistical voters")
    .addOption(
      new Option(
        "--env <env>",
        "the environment: the embedded suite; dbbench (the fixed splits, AgentBench's accuracies in the report); appworld or swe-gym (at local fixture servers unless their URLs are given); all but embedded need --policy worker",
      )
        .choices(["embedded", "dbbench", "appworld", "swe-gym"])
        .default("embedded"),
    )
    .addOption(new Option("--engine <e>", "with --env dbbench: the SQL engine").choices(["mysql", "sqlite"]).default("mysql"))
    .option("--mysql-url <url>", "with --env dbbench: the MySQL/MariaDB server", "mysql://root@127.0.0.1:3306")
    .option("--pool <file>", "with --env dbbench: a pool written by `evolve --env dbbench` (default the hand-written siblings)")
    .option("--db-concurrency <n>", "with --env dbbench: rollout databases open at once", "8");
  withRemoteEnvOptions(experiment, 4).action(async (raw) => {
    const o = parseFlags(ExperimentFlags, raw, "experiment");
    const worker =
      o.policy === "worker"
        ? {
            url: o.policyUrl ?? "",
            token: o.policyToken,
            model: o.policyModel,
            learningRate: o.policyLr,
            maxTokens: o.policyMaxTokens,
            maxInFlight: o.policyMaxInFlight,
            constrainToolCalls: o.constrainedCalls,
          }
        : undefined;
    const out = o.out ?? `results/${new Date().toISOString().replace(/[:.]/g, "-")}`;
    const startWorker = o.policy === "worker" && !o.policyUrl ? { model: o.policyModel, recipe: SuiteLmRecipe.parse({ size: o.suiteLmSize }), cacheDir: o.modelCache } : undefined;
    await (await import("./commands/experiment.ts")).experimentCommand({
      startWorker,
      seeds: o.seeds ?? (o.quick ? [1, 2, 3] : [1, 2, 3, 4, 5]),
      arms: o.arms,
      out,
      quick: o.quick,
      sweeps: o.sweep ?? [],
      sideEffects: o.sideEffects,
      cueHalfLife: o.cueHalfLife,
      poolSize: o.poolSize,
      steps: o.steps,
      train: o.train,
      cueRate: o.cueRate,
      cueStrength: o.cueStrength,
      fixedSuite: o.fixedSuite,
      protocol: o.protocol,
      runtime: o.runtime,
      resume: o.resume,
      worker,
      evalTasks: o.evalTasks,
      evalSamples: o.evalSamples,
      profileBudget: o.profileBudget,
      voters: o.voters,
      ...(o.env === "dbbench" ? { dbbench: { engine: o.engine, mysqlUrl: o.mysqlUrl, pool: o.pool, concurrency: o.dbConcurrency } } : {}),
      remote: remoteEnvOf(o.env, o),
    });
  });

  program
    .command("confirm")
    .description("Run a declared confirmation block once: fresh seeds, declared and committed in confirmation/blocks.json before the run; figures to confirmation/<block>/")
    .argument("<block>", "the block id, e.g. C1")
    .option("--jobs <n>", "experiment processes at once (each on part of the block)", String(2))
    .action(async (block: string, raw) => {
      const o = parseFlags(ConfirmFlags, raw, "confirm");
      await (await import("./commands/confirm.ts")).confirmCommand({ root: process.cwd(), block, jobs: o.jobs });
    });

  program
    .command("report")
    .description("Pool experiment runs of one configuration on disjoint seeds into one summary, report and plots")
    .argument("<runs...>", "result folders, each with a summary.json")
    .requiredOption("--out <dir>", "where the pooled summary.json, report.md and plots go")
    .action(async (runs: string[], raw) => {
      await (await import("./commands/report.ts")).reportCommand(runs, parseFlags(ReportFlags, raw, "report").out);
    });

  program
    .command("tune")
    .description("Compare harness-s settings with the defaults on the validation protocol (no held-out task is built) and apply the adoption rule")
    .option("--seeds <list>", "seeds for tuning; keep them apart from the seeds you report", "101-110")
    .option("--candidates <json>", 'name → training-config overrides, e.g. \'{"k=3":{"k":3}}\' (default: harness-s\'s own settings around the defaults)')
    .option("--train <json>", "overrides shared by the defaults and every candidate, e.g. '{\"steps\":10}'")
    .option("--min-gain <points>", "validation Avg@3 points a candidate must gain on average", String(2))
    .option("--min-share <share>", "share of seeds in which it must be better", String(0.7))
    .option("--objective <arm>", "whose validation Avg@3 is maximised: harness-s, or a baseline (grpo-budget, grpo) when tuning shared settings", "harness-s")
    .option("--out <dir>", "output folder (default results/tune-<timestamp>)")
    .action(async (raw) => {
      const o = parseFlags(TuneFlags, raw, "tune");
      const out = o.out ?? `results/tune-${new Date().toISOString().replace(/[:.]/g, "-")}`;
      await (await import("./commands/tune.ts")).tuneCommand({
        seeds: o.seeds,
        out,
        train: o.train,
        candidates: o.candidates ?? DEFAULT_CANDIDATES,
        rule: { minGain: o.minGain / 100, minShare: o.minShare, objective: o.objective },
      });
    });

  const suiteLm = program.command("suite-lm").description("The suite LM: a small Llama model made here, warm-started on the embedded initial policy's episodes (no held-out task)");
  const suiteLmOptions = (c: Command) =>
    c
      .addOption(
        new Option("--size <s>", "model size (toy ≈ 75k, small ≈ 1.1M, base ≈ 5.6M, large ≈ 28M parameters with 1,024 token ids)")
          .choices(["toy", "small", "base", "large"])
          .default("small"),
      )
      .option("--model-seed <n>", "the model's initial weights and data order", String(0))
      .option("--epochs <n>", "supervised epochs of the warm start", String(SuiteLmRecipe.parse({}).epochs))
      .option(
        "--warm-start-seeds <list>",
        "suite instances whose train and dev episodes the warm start imitates (never an experiment's seeds)",
        SuiteLmRecipe.parse({}).warmStart.suiteSeeds.join(","),
      )
      .option("--h0-samples <n>", "episodes per imitated task under H0 in the warm start", String(SuiteLmRecipe.parse({}).warmStart.h0Samples))
      .option("--instruct <n>", "conversations of the instruction-following corpus (generated worlds, no suite task)", String(SuiteLmRecipe.parse({}).instruct.conversations))
      .option(
        "--instruct-invented <share>",
        "share of the corpus's tool names that are invented words rather than the suite's names in random roles",
        String(SuiteLmRecipe.parse({}).instruct.invented),
      )
      .option("--instruct-epochs <n>", "epochs on the instruction-following corpus alone before the warm start", String(SuiteLmRecipe.parse({}).instruct_epochs))
      .option("--cache-dir <dir>", "where built models are kept, by recipe hash", ".harness-s/models");
  const recipeOf = (o: {
    size: SuiteLmRecipe["size"];
    modelSeed: number;
    epochs: number;
    warmStartSeeds: number[];
    h0Samples: number;
    instruct: number;
    instructEpochs: number;
    instructInvented: number;
  }) =>
    SuiteLmRecipe.parse({
      size: o.size,
      seed: o.modelSeed,
      epochs: o.epochs,
      instruct_epochs: o.instructEpochs,
      warmStart: { suiteSeeds: o.warmStartSeeds, h0Samples: o.h0Samples },
      instruct: { conversations: o.instruct, invented: o.instructInvented },
    });
  suiteLmOptions(suiteLm.command("build").description("Build the suite LM (or find it in the cache) and print its record")).action(async (raw) => {
    const o = parseFlags(SuiteLmFlags, raw, "suite-lm build");
    await (await import("./commands/suite-lm.ts")).suiteLmBuildCommand(recipeOf(o), o.cacheDir);
  });
  suiteLmOptions(suiteLm.command("compare").description("Embedded initial policy vs suite LM before training: H0 on train and held-out, each sibling relative to H0"))
    .option("--seeds <list>", "suite instances (and pools) to compare on", "101-103")
    .option("--tasks <n>", "tasks per split (evenly spaced)", String(24))
    .option("--samples <n>", "attempts per task", String(3))
    .option("--max-tokens <n>", "most tokens per turn", String(24))
    .option("--constrained-calls", "the token model samples each turn as exactly one call of an offered tool")
    .option("--model-dir <dir>", "compare this built model folder (a block's committed model, an earlier build) instead of the recipe's")
    .option("--out <dir>", "output folder", "results/suite-lm-start")
    .action(async (raw) => {
      const o = parseFlags(SuiteLmFlags, raw, "suite-lm compare");
      await (await import("./commands/suite-lm.ts")).suiteLmCompareCommand({
        recipe: recipeOf(o),
        cacheDir: o.cacheDir,
        seeds: o.seeds!,
        tasks: o.tasks!,
        samples: o.samples!,
        out: o.out!,
        maxTokens: o.maxTokens!,
        constrainToolCalls: o.constrainedCalls ?? false,
        ...(o.modelDir ? { modelDir: o.modelDir } : {}),
      });
    });

  program
    .command("evolve")
    .description("Evolve a sibling pool from H0 along the repair directions and save it (the embedded suite, or DBBench with an LLM proposer)")
    .option("--out <file>", "where to write the pool", "results/pool.json")
    .option("--seed <n>", "the suite instance (and evolution) seed", String(1))
    .option("--cue-strength <b>", "the policy's fixed logit bonus for a hinted action", String(defaultEmbeddedSettings.cueStrength))
    .option("--side-effects <p>", "how often a sibling's edit misleads outside its area (see experiment)")
    .option("--pool-size <n>", "siblings to keep (default 8; DBBench 6)")
    .addOption(new Option("--protocol <p>", "test, or validation (the dev split without the held-back pair)").choices(["test", "validation"]).default("test"))
    .addOption(new Option("--env <env>", "embedded, or dbbench (an LLM proposer; the policy at --policy-url; dev rows only)").choices(["embedded", "dbbench"]).default("embedded"))
    .option("--proposer-url <url>", "dbbench: the proposer's OpenAI-compatible endpoint (key: HARNESS_S_PROPOSER_KEY)")
    .option("--proposer-model <m>", "dbbench: the proposer's model")
    .option("--policy-url <url>", "dbbench: the policy's OpenAI-compatible endpoint, e.g. a policy worker's /v1 (key: HARNESS_S_POLICY_KEY)")
    .option("--policy-model <m>", "dbbench: the model name the policy endpoint serves", "policy")
    .addOption(new Option("--engine <e>", "dbbench: the SQL engine").choices(["mysql", "sqlite"]).default("mysql"))
    .option("--mysql-url <url>", "dbbench: MySQL/MariaDB server", "mysql://root@127.0.0.1:3306")
    .option("--max-calls <n>", "dbbench: proposer calls allowed in all", "40")
    .option("--max-rollouts <n>", "dbbench: rollouts allowed in all (H0's measurement included)", "3000")
    .option("--rounds <n>", "dbbench: rounds per direction", "2")
    .option("--candidates <n>", "dbbench: proposals per round", "3")
    .option("--trials <n>", "dbbench: rollouts per dev row and candidate", "2")
    .option("--screen <n>", "dbbench: dev rows of the minibatch screen (GEPA-style) before the full dev set", "12")
    .option("--dev-tasks <n>", "dbbench: the first N dev rows only (smoke runs)")
    .action(async (raw) => {
      if (raw.env === "dbbench") {
        const keys = [
          "out",
          "proposerUrl",
          "proposerModel",
          "policyUrl",
          "policyModel",
          "engine",
          "mysqlUrl",
          "maxCalls",
          "maxRollouts",
          "rounds",
          "candidates",
          "trials",
          "screen",
          "seed",
          "devTasks",
          "poolSize",
        ];
        const picked = Object.fromEntries(keys.filter((k) => raw[k] !== undefined).map((k) => [k, raw[k]]));
        await (await import("./commands/evolve-dbbench.ts")).dbbenchEvolve(picked as never);
        return;
      }
      const { env: _env, policyModel: _pm, engine: _e, mysqlUrl: _m, maxCalls: _c, maxRollouts: _r, rounds: _ro, candidates: _ca, trials: _t, screen: _s, ...embedded } = raw;
      const o = parseFlags(EvolveFlags, embedded, "evolve");
      await (await import("./commands/evolve.ts")).evolveCommand({
        out: o.out,
        seed: o.seed,
        cueStrength: o.cueStrength,
        sideEffects: o.sideEffects,
        poolSize: o.poolSize,
        protocol: o.protocol,
      });
    });

  program
    .command("serve")
    .description('Serve the router API locally over HTTP against DynamoDB Local, with the embedded pool registered as "embedded"')
    .option("--port <n>", "port to listen on (0 picks a free one)", String(18787))
    .option("--host <h>", "address to bind", "127.0.0.1")
    .option("--api-key <key>", "the admin API key to accept (default: a random one, printed)")
    .option("--voters <file>", "a voter panel (JSON: statistical and OpenAI-compatible LLM voters, weights, quorum); default the statistical voters")
    .option(
      "--gateway-upstream <url>",
      "serve the Rank-1 harness gateway at /v1/gateway/chat/completions in front of this OpenAI-compatible model endpoint (key: HARNESS_S_GATEWAY_UPSTREAM_KEY)",
    )
    .option("--gateway-model <name>", "the model name sent upstream (default: the agent's)")
    .option("--gateway-pool <id>", "the pool the gateway routes between", "embedded")
    .option("--gateway-env <env>", "how the gateway reads tool outputs: generic, dbbench, appworld (execute's output) or swe-gym (run, read, edit, write)", "generic")
    .option("--allow-loopback-endpoints", "let callers' policy endpoints and environments be on loopback (a laptop, tests); private ranges stay refused", false)
    .action(async (raw) => (await import("./commands/serve.ts")).serveCommand(parseFlags(ServeFlags, raw, "serve")));

  program
    .command("fixtures-serve")
    .description("Start the local AppWorld-protocol and SWE-ReX-protocol servers (fixture tasks and repositories written here; agent code confined by bubblewrap) on loopback")
    .option("--appworld-servers <n>", "AppWorld-protocol servers (one live task each)", "2")
    .option("--appworld-port <n>", "the first AppWorld server's port (the rest follow; 0 picks free ones)", "0")
    .option("--swe-port <n>", "the SWE-ReX-protocol server's port (0 picks a free one)", "0")
    .option("--no-swe", "start no SWE-ReX-protocol server")
    .option("--trusted-fixtures-only", "run without bubblewrap where it is missing: only for code you trust (the servers refuse to start unconfined otherwise)", false)
    .action(async (raw) => (await import("./commands/fixtures-serve.ts")).fixturesServeCommand(parseFlags(FixturesServeFlags, raw, "fixtures-serve")));

  const envEval = program
    .command("eval")
    .description("Evaluate an OpenAI-compatible agent on AppWorld or SWE-Gym under one harness (Pass@3, Avg@3, behaviours); write summary.json and report.md")
    .addOption(new Option("--env <env>", "the environment (at local fixture servers unless their URLs are given)").choices(["appworld", "swe-gym"]).makeOptionMandatory())
    .requiredOption("--base-url <url>", "the OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    .requiredOption("--model <m>", "model name")
    .option("--api-key <k>", "API key (default $OPENAI_API_KEY, else none)")
    .option("--harness <id>", "a harness of the environment's pool (default its H0, e.g. appworld-h0 or swe-h0)")
    .addOption(new Option("--split <s>", "which tasks").choices(["train", "dev", "heldout", "all"]).default("all"))
    .option("--attempts <n>", "attempts per task", String(3))
    .option("--limit <n>", "only the first n tasks")
    .option("--out <dir>", "output folder (default results/eval-<env>-<timestamp>)")
    .option("--temperature <t>", "sampling temperature", String(1))
    .option("--timeout-seconds <s>", "per model request", String(120));
  withRemoteEnvOptions(envEval, 2).action(async (raw) => {
    const o = parseFlags(EnvEvalFlags, raw, "eval");
    const { attempts, errored } = await (await import("./commands/env-eval.ts")).envEvalCommand({
      ...o,
      apiKey: o.apiKey ?? process.env.OPENAI_API_KEY,
      out: o.out ?? `results/eval-${o.env}-${new Date().toISOString().replace(/[:.]/g, "-")}`,
    });
    if (errored > 0) {
      process.stderr.write(`error: ${errored} of ${attempts} attempts errored at the model endpoint (${o.baseUrl}); they count as failures in the summary\n`);
      process.exit(1);
    }
  });

  const envServe = program
    .command("env-serve")
    .description("Serve a built-in environment over the OpenEnv protocol (a WebSocket session per episode at /ws), for your own trainer or a rescue to use")
    .addOption(
      new Option("--env <env>", "the environment (appworld and swe-gym at local fixture servers unless their URLs are given)")
        .choices(["embedded", "dbbench", "appworld", "swe-gym"])
        .makeOptionMandatory(),
    )
    .option("--port <n>", "port to listen on (0 picks a free one)", String(8000))
    .option("--host <h>", "address to bind", "127.0.0.1")
    .addOption(new Option("--engine <e>", "with --env dbbench: the SQL engine").choices(["mysql", "sqlite"]).default("sqlite"))
    .option("--mysql-url <url>", "with --env dbbench and --engine mysql: the MySQL/MariaDB server", "mysql://root@127.0.0.1:3306")
    .option("--tasks-out <file>", "write the served training tasks as a rescue takes them (JSON), for your trainer's dataset");
  withRemoteEnvOptions(envServe, 2).action(async (raw) => (await import("./commands/env-serve.ts")).envServeCommand(parseFlags(EnvServeFlags, raw, "env-serve")));

  program
    .command("bench")
    .description("Measure embedded rollouts/s and router decisions/s with latency percentiles, against baselines in the same run")
    .option("--seconds <s>", "measuring time per figure", String(2))
    .option("--worker", "also the policy worker's sampling and update tokens/s over protocol v2 vs direct (creates its venv if missing)")
    .option("--env <env>", "embedded (the suite, the router, the API, the queues) or dbbench (the DBBench environment's cost per rollout on SQLite and MariaDB)", "embedded")
    .option("--mysql-url <url>", "with --env dbbench: the MariaDB/MySQL server", "mysql://root@127.0.0.1:3306")
    .action(async (raw) => {
      const o = parseFlags(BenchFlags, raw, "bench");
      if (o.env === "dbbench") for (const line of await (await import("./commands/bench-dbbench.ts")).benchDbbench({ mysqlUrl: o.mysqlUrl })) console.log(line);
      else await (await import("./commands/bench.ts")).benchCommand({ seconds: o.seconds, worker: o.worker === true });
    });

  program
    .command("policy-serve")
    .description("Serve the embedded policy behind the policy endpoint's HTTP protocol (what the dispatch and coordinator workers call)")
    .option("--port <n>", "port to listen on", String(policyServeDefaults.port))
    .option("--host <h>", "address to bind", String(policyServeDefaults.host))
    .option("--cue-strength <b>", "the policy's fixed logit bonus for a hinted action", String(policyServeDefaults.cueStrength))
    .action(async (raw) => (await import("./commands/policy-serve.ts")).policyServeCommand(parseFlags(PolicyServeFlags, raw, "policy-serve")));

  program
    .command("policy-worker")
    .description("Start the reference policy worker (protocol v2: Python, torch, transformers, peft); creates its venv first if it is missing")
    .option("--model <path>", "a Hugging Face model directory, or tiny (a tiny model built offline, for tests)", "tiny")
    .option("--port <n>", "port to listen on", String(8765))
    .option("--host <h>", "address to bind (loopback unless told otherwise)", "127.0.0.1")
    .option("--token <t>", "bearer token every request but /healthz must carry")
    .option("--state-dir <dir>", "where adapters and checkpoints live (default: a fresh temp folder); a restarted worker on the same folder restores them")
    .option("--device <d>", "cpu or cuda[:n] (default: cuda when torch sees one)")
    .option("--max-policies <n>", "policies held at once (429 past it)")
    .option("--max-episodes <n>", "open episodes per policy (429 past it)")
    .option("--max-body-mb <n>", "largest request body (413 past it)")
    .option("--kv-cache-mb <n>", "memory for the open episodes' KV caches (least recently used evicted first)")
    .option("--sample-timeout-s <s>", "longest a sample may wait and run (503 past it)")
    .addOption(new Option("--tool-parser <p>", "the tool-call format the model writes (default: read from its chat template)").choices(["hermes", "llama3_json", "mistral"]))
    .action(async (raw) => {
      const o = parseFlags(PolicyWorkerFlags, raw, "policy-worker");
      const { model, port, host, token, stateDir, ...tuning } = o;
      if (model !== "tiny" && !existsSync(model)) throw new UsageError(`--model ${model}: no such folder (a Hugging Face model directory, or tiny)`);
      const worker = await (await import("./policy-worker.ts")).startPolicyWorker({ model, port, host, token, stateDir, tuning }, (line) => console.error(line));
      console.log(`harness-s policy worker (protocol v2, model ${o.model}) ready on ${worker.url}; Ctrl-C stops it`);
      const stop = async () => {
        await worker.stop();
        process.exit(0);
      };
      process.once("SIGINT", () => void stop());
      process.once("SIGTERM", () => void stop());
      worker.process.once("exit", (code) => process.exit(code ?? 1));
    });

  const dbbench = program.command("dbbench").description("DBBench (AgentBench's database task) on real data and a real SQL server");
  const dbbenchData = () => process.env.HARNESS_S_DBBENCH_DIR ?? BUNDLED_DATA_DIR;

  dbbench
    .command("verify")
    .description("Replay the gold of every row through the environment and evaluator; print matched / total per type")
    .addOption(new Option("--engine <e>", "SQL engine").choices(["mysql", "sqlite"]).default("mysql"))
    .addOption(new Option("--split <s>", "data split").choices(["standard", "dev"]).default("standard"))
    .option("--json", "print one JSON object", false)
    .option("--concurrency <n>", "rollouts at a time", String(8))
    .option("--data <dir>", "folder with standard.jsonl and dev.jsonl (default $HARNESS_S_DBBENCH_DIR or the bundled copy)")
    .option("--mysql-url <url>", "MySQL/MariaDB server", "mysql://root@127.0.0.1:3306")
    .action(async (raw) => {
      const o = parseFlags(DbbenchVerifyFlags, raw, "dbbench verify");
      await (await import("./commands/dbbench.ts")).dbbenchVerifyCommand({ ...o, data: o.data ?? dbbenchData() });
    });

  dbbench
    .command("eval")
    .description("Evaluate an OpenAI-compatible agent (vLLM, a hosted API) on a split under one harness; write summary.json and report.md")
    .requiredOption("--base-url <url>", "the OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    .requiredOption("--model <m>", "model name")
    .option("--api-key <k>", "API key (default $OPENAI_API_KEY, else none)")
    .option("--harness <id>", "dbbench-h0 or a sibling id (dbbench-schema-preview, …)", "dbbench-h0")
    .addOption(new Option("--split <s>", "data split").choices(["standard", "dev"]).default("dev"))
    .addOption(new Option("--engine <e>", "SQL engine").choices(["mysql", "sqlite"]).default("mysql"))
    .option("--concurrency <n>", "rollouts at a time", String(4))
    .option("--limit <n>", "only the first n rows")
    .option("--out <dir>", "output folder (default results/dbbench-<timestamp>)")
    .option("--system-file <file>", "replace the system prompt")
    .option("--temperature <t>", "sampling temperature", String(0))
    .option("--timeout-seconds <s>", "per model request", String(120))
    .option("--no-logprobs", "do not ask the server for token log-probabilities")
    .option("--data <dir>", "folder with the splits (default $HARNESS_S_DBBENCH_DIR or the bundled copy)")
    .option("--mysql-url <url>", "MySQL/MariaDB server", "mysql://root@127.0.0.1:3306")
    .action(async (raw) => {
      const o = parseFlags(DbbenchEvalFlags, raw, "dbbench eval");
      const { rows, erroredRows } = await (await import("./commands/dbbench.ts")).dbbenchEvalCommand({
        ...o,
        apiKey: o.apiKey ?? process.env.OPENAI_API_KEY,
        data: o.data ?? dbbenchData(),
        out: o.out ?? `results/dbbench-${new Date().toISOString().replace(/[:.]/g, "-")}`,
      });
      if (erroredRows > 0) {
        process.stderr.write(`error: ${erroredRows} of ${rows} rows errored at the model endpoint (${o.baseUrl}); their rows count as failures in the summary\n`);
        process.exit(1);
      }
    });
  return program;
}

/**
 * Runs the CLI on `argv` (as `process.argv`: node, script, arguments) and answers its exit code:
 * 0, or 2 for every usage error (commander's own and the flag schemas'), with the message on
 * `output`'s error stream. Errors that are not usage errors are thrown.
 *
 * @example
 * process.exitCode = await runCli(process.argv);
 */
export async function runCli(argv: readonly string[], output: CliOutput = processOutput): Promise<number> {
  try {
    await buildProgram(output).parseAsync([...argv]);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    if (err instanceof HarnessSError) {
      output.writeErr(`error [${err.code}]: ${err.message}\n`);
      return 2;
    }
    if (err instanceof ZodError) {
      output.writeErr(`error [VALIDATION_FAILED]: ${formatIssues(err.issues).join("; ")}\n`);
      return 2;
    }
    throw err;
  }
}
