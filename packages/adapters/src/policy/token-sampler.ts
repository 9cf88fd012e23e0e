import { randomBytes } from "node:crypto";
import { StalePolicyVersionError } from "@harness-s/core/dispatch";
import type {
  ActionChoice,
  Policy,
  PolicyObservation,
  Rng,
  TrajectoryStep,
  UpdateSample,
  UpdateSettings,
} from "@harness-s/core";
import { contextWeights } from "@harness-s/core";
import {
  datumFromTurns,
  TRAINING_SAMPLING,
  type Datum,
  type PolicyStateV2,
  type SampleResponseV2,
  type ToolSchema,
} from "@harness-s/core/protocol";
import { PolicyReplyInvalidError } from "../errors.ts";
import { NO_TOOL_CALL } from "../llm/openai-policy.ts";
import type { TokenPolicyClient } from "./token-policy-client.ts";
import { firstMessages, nextMessage, readsDifferentlyUnderBase, underBase } from "./token-render.ts";
import { choiceOf } from "./tool-choice.ts";

/** What sampling at a policy needs: its id, how a task's turns are rendered, and the version to sample. */
export interface TokenSamplerOptions {
  /** The policy's id at the worker. */
  policyId: string;
  system: string;
  /**
   * The tools of a task's environment as JSON schemas (the function name is the action, unless `toolNames` renames it).
   */
  toolSchemas: (tools: readonly string[]) => ToolSchema[];
  /**
   * The function name the model sees for an action, where they differ (DBBench's `submit` is `commit_final_answer`).
   */
  toolNames?: Readonly<Record<string, string>>;
  maxTokens?: number;
  /**
   * Sample (and replay) only at this version (a dispatch worker's rollout, a caller's pinned rescue); the worker
   * answers 409 otherwise.
   */
  expectVersion?: number;
  /**
   * Each turn is exactly one call of an offered tool, its arguments fitting the tool's schema (sampled and trained
   * under that constraint).
   */
  constrainToolCalls?: boolean;
}

/** How stored rollouts become datums: which turns train, and in whose context they are scored. */
export type DatumSettings = Pick<UpdateSettings, "maskIntercepted" | "rescueContext" | "rescueCorrection">;

interface Episode {
  id: string;
  calledTool: boolean;
  /** Turns sampled so far: the next turn's key is `<id>#<turns>`, so a repeated request is that turn again. */
  turns: number;
}

/**
 * Sampling at a policy over protocol v2 (the reference Python worker, a GPU endpoint, a caller's
 * endpoint): the policy exists there already and is never created, trained or changed here. Each
 * episode keeps its token prefix at the worker; an episode is known by the per-episode `Rng` the
 * episode runner passes on every turn, so no id has to travel through the runner. A turn appends
 * the tool output (with the harness's notes and hints) as a message, samples at the version
 * (temperature 1, top_p 1), and maps the parsed tool call to an action; a call the worker could
 * not parse, an unknown tool or no call at all is a failed round (`invalid`, `unknown:<name>`,
 * `no-tool-call`). The step keeps its ids and log-probabilities; {@link datums} turns stored
 * rollouts into token rows (mask 1 on sampled tokens, 0 on prompts, tool results, notes, forced
 * and — with `maskIntercepted` — intercepted turns). {@link TokenTrainer} adds creating and
 * training the policy.
 *
 * @example
 * const sampler = new TokenSampler(client, { policyId: "my-policy", expectVersion: 7, system, toolSchemas });
 */
export class TokenSampler implements Omit<Policy, "update"> {
  protected current = 0;
  /** The vocabulary the worker states (`tokenizer.vocab_size`): every id it answers is below it. */
  private vocabSize?: number;
  private opened?: Promise<void>;
  private readonly episodes = new WeakMap<Rng, Episode>();
  private counter = 0;
  /**
   * Names this instance's episodes at the worker: two instances over one policy (a dispatch
   * worker's concurrent rollouts, each its own runner) must never share an episode id, or their
   * turns would land in one episode's ids and cache.
   */
  private readonly tag = randomBytes(4).toString("hex");

  constructor(
    protected readonly client: TokenPolicyClient,
    private readonly opts: TokenSamplerOptions,
  ) {}

  /** The policy's id at the worker. */
  get id(): string {
    return this.opts.policyId;
  }

  version(): number {
    return this.opts.expectVersion ?? this.current;
  }

  /** Reads the policy's state at the worker (once): its version and vocabulary. */
  ensure(): Promise<void> {
    this.opened ??= this.open().then((s) => {
      this.current = s.version;
      this.vocabSize = s.tokenizer.vocab_size;
    });
    return this.opened;
  }

  /** The policy's state at the worker: read, or (a trainer's) created. */
  protected open(): Promise<PolicyStateV2> {
    return this.client.state(this.opts.policyId);
  }

  async act(obs: PolicyObservation, rng: Rng): Promise<ActionChoice> {
    await this.ensure();
    const known = this.episodes.get(rng);
    const episode = known ?? {
      id: `${episodePrefix(this.opts.policyId)}.${this.tag}.e${++this.counter}`,
      calledTool: false,
      turns: 0,
    };
    this.episodes.set(rng, episode);
    const sampling = { ...TRAINING_SAMPLING, max_tokens: this.opts.maxTokens ?? 64, seed: rng.int(2 ** 31) };
    const version = { exact: this.version() };
    const key = `${episode.id}#${episode.turns}`;
    // The first turn renders the conversation, a later one appends the observation to it.
    const turn = known
      ? { append: [nextMessage(obs, episode.calledTool)] }
      : {
          messages: firstMessages(this.opts.system, obs),
          tools: this.opts.toolSchemas(obs.tools),
          ...(this.opts.constrainToolCalls ? { constrain_tool_calls: true } : {}),
        };
    const s = checkedSample(
      await this.client.sample(this.opts.policyId, { episode_id: episode.id, version, ...turn, sampling }, key),
      version.exact,
      this.vocabSize,
    );
    episode.turns++;
    const choice = this.choice(s, obs.tools);
    episode.calledTool = choice.action !== NO_TOOL_CALL;
    return choice;
  }

  /** Frees the episode's ids and cache at the worker (best effort: the worker also drops them at the next update). */
  async endEpisode(rng: Rng): Promise<void> {
    const episode = this.episodes.get(rng);
    if (!episode) return;
    this.episodes.delete(rng);
    await this.client.closeEpisode(this.opts.policyId, episode.id).catch(() => undefined);
  }

  private choice(s: SampleResponseV2, tools: readonly string[]): ActionChoice {
    const tokens = {
      promptIds: s.prompt_ids,
      completionIds: s.completion.ids,
      logprobs: s.completion.logprobs,
      version: s.policy_version,
    };
    const logProb = s.completion.logprobs.reduce((a, b) => a + b, 0);
    const { text, content, tool_calls, parse_error } = s.completion;
    const toolCalls = tool_calls?.map((c) => ({ name: c.function.name, arguments: c.function.arguments }));
    return choiceOf(
      { text, content, ...(toolCalls ? { toolCalls } : {}), ...(parse_error ? { parseError: parse_error } : {}) },
      tools,
      this.opts.toolNames ?? {},
      logProb,
      tokens,
    );
  }

  /**
   * The datums of some samples: per rollout, its turns' ids in order; samples without sampled
   * tokens are left out. Under `rescueContext: "base"` a rollout whose turns read differently in
   * H0's context (a rescue under a sibling) is replayed there at {@link version}: the worker
   * rebuilds its prompts from H0's messages and scores the same completions, which become the
   * behaviour log-probabilities (the ratio starts at 1, as for an on-policy sample in that context).
   */
  async datums(batch: { samples: readonly UpdateSample[]; settings: DatumSettings }): Promise<Datum[]> {
    const datums = await Promise.all(batch.samples.map((sample, i) => this.datum(sample, i, batch.settings)));
    return datums.filter((d) => d !== undefined);
  }

  private async datum(sample: UpdateSample, i: number, settings: DatumSettings): Promise<Datum | undefined> {
    const steps = sample.rollout.steps.filter((step) => step.tokens);
    const trained = steps.map((step) => !step.forced && !(settings.maskIntercepted && step.intercepted));
    if (!steps.some((step, j) => trained[j] && step.tokens!.completionIds.length > 0)) return undefined;
    const rescued =
      settings.rescueContext === "base" && steps.some((step) => readsDifferentlyUnderBase(step.observation));
    const replayed = rescued ? await this.replayInBase(steps) : undefined;
    // Under a correction, each replayed token's advantage is weighted by its H0-context over sampled-context
    // probability (truncated).
    const correction = replayed ? settings.rescueCorrection : undefined;
    const turns = steps.map((step, j) => ({
      promptIds: replayed?.[j]?.prompt_ids ?? step.tokens!.promptIds,
      completionIds: step.tokens!.completionIds,
      logprobs: replayed?.[j]?.logprobs ?? step.tokens!.logprobs,
      trained: trained[j]!,
      ...(correction ? { weights: contextWeights(correction, replayed![j]!.logprobs, step.tokens!.logprobs) } : {}),
    }));
    const datum = datumFromTurns(`${sample.rollout.id}#${i}`, sample.rollout.taskId, turns, sample.advantage);
    return this.opts.constrainToolCalls
      ? { ...datum, constraint: { tools: this.opts.toolSchemas(steps[0]!.observation.tools) } }
      : datum;
  }

  private replayInBase(steps: readonly TrajectoryStep[]) {
    const base = steps.map((step) => underBase(step.observation));
    return this.client.replay(this.opts.policyId, {
      version: { exact: this.version() },
      messages: firstMessages(this.opts.system, base[0]!),
      tools: this.opts.toolSchemas(base[0]!.tools),
      turns: steps.map((step, j) => ({
        ...(j > 0 ? { append: [nextMessage(base[j]!, steps[j - 1]!.action !== NO_TOOL_CALL)] } : {}),
        completion_ids: step.tokens!.completionIds,
      })),
      constrain_tool_calls: this.opts.constrainToolCalls ?? false,
    });
  }
}

/**
 * An episode id's readable prefix: the policy's id as protocol v2 spells ids (a caller's policy may be named with any
 * characters, at any length).
 */
const episodePrefix = (policyId: string) =>
  policyId
    .replace(/[^A-Za-z0-9_:@+=-]/g, "-")
    .slice(0, 64)
    .replace(/^[^A-Za-z0-9]/, "p");

/**
 * A sample as the rollout may keep it: at the version it asked for (a pinned rescue never mixes
 * versions), every id below the vocabulary the worker stated. Anything else fails the rollout now.
 */
function checkedSample(s: SampleResponseV2, version: number, vocabSize: number | undefined): SampleResponseV2 {
  if (s.policy_version !== version)
    throw new StalePolicyVersionError(
      s.policy_version,
      version,
      `the endpoint answered at policy version ${s.policy_version}; the rollout asked for ${version}`,
    );
  if (vocabSize !== undefined) {
    const outside = [s.prompt_ids, s.completion.ids].find((ids) => ids.some((id) => id >= vocabSize));
    if (outside)
      throw new PolicyReplyInvalidError(
        `the endpoint answered ids past its vocabulary of ${vocabSize} (${outside.find((id) => id >= vocabSize)})`,
      );
  }
  return s;
}
