import {
  NotConfiguredError,
  type ActionChoice,
  type Policy,
  type PolicyObservation,
  type Rng,
  type UpdateSample,
} from "@harness-s/core";
import { extendsIds, segmentedDatums, TRAINING_SAMPLING, type ToolSchema } from "@harness-s/core/protocol";
import { StalePolicyVersionError, type RolloutRows } from "@harness-s/core/dispatch";
import type { TokenMode } from "@harness-s/core/callers";
import { ServedModelMismatchError } from "../errors.ts";
import { NO_TOOL_CALL } from "../llm/openai-policy.ts";
import { answeredModel, TOKEN_MODES, wholeVersion, type ServedEpisode, type ServedTarget } from "./served-modes.ts";
import type { DatumSettings } from "./token-sampler.ts";
import { firstMessages, nextMessage, readsDifferentlyUnderBase } from "./token-render.ts";
import { baseTurns, type BaseScoring } from "./served-base.ts";
import { choiceOf } from "./tool-choice.ts";

/**
 * What sampling at a served endpoint needs: where, in which token mode, the version its served model carries, and how a
 * task's turns are rendered.
 */
export interface ServedSamplerOptions {
  target: ServedTarget;
  mode: TokenMode;
  /** The version `target.model` serves: every turn's ids are recorded at it. */
  weightVersion: number;
  system: string;
  toolSchemas: (tools: readonly string[]) => ToolSchema[];
  toolNames?: Readonly<Record<string, string>>;
  maxTokens?: number;
  /** How the kind re-scores completions in H0's context (`context=base`); absent: it cannot. */
  base?: BaseScoring;
}

/**
 * A reply that states its weight version (SGLang's `meta_info.weight_version`, the server's `--weight-version` a
 * trainer sets at each update) must state the rescue's; a version that is not a whole number (SGLang's default
 * `"default"`: the trainer names none) pins nothing and is not checked.
 */
function checkStatedVersion(stated: string | undefined, wanted: number): void {
  const version = wholeVersion(stated);
  if (version !== undefined && version !== wanted)
    throw new StalePolicyVersionError(
      version,
      wanted,
      `the endpoint answered at weight version ${stated}; the rescue samples version ${wanted}`,
    );
}

interface Episode {
  at: ServedEpisode;
  calledTool: boolean;
  callId?: string;
  /** The ids the episode holds after its last turn (its prompt and completion): a turn's prompt beyond them is new. */
  ids: readonly number[];
}

/**
 * Sampling at a vLLM, SGLang or OpenAI-compatible server that states no weight version, pinned by
 * its served model's name: every reply that names a model must name it (another fails the turn,
 * `SERVED_MODEL_MISMATCH`). An episode samples in the endpoint's token mode (tokens in or messages
 * in: see `TOKEN_MODES`); each turn's step keeps the whole prompt the server sampled from, its
 * completion ids and their log-probabilities, so {@link datums} can check that each turn extends
 * the ids before it and split a rollout where one does not (`segmentedDatums`). The episode
 * runner's per-episode `Rng` names the episode, as for protocol v2.
 *
 * @example
 * const sampler = new ServedSampler({ target, mode: "completions-ids", weightVersion: 7, system, toolSchemas });
 */
export class ServedSampler implements Omit<Policy, "update"> {
  private readonly episodes = new WeakMap<Rng, Episode>();

  constructor(private readonly opts: ServedSamplerOptions) {}

  version(): number {
    return this.opts.weightVersion;
  }

  async act(obs: PolicyObservation, rng: Rng): Promise<ActionChoice> {
    const { target, mode, maxTokens } = this.opts;
    const known = this.episodes.get(rng);
    const episode = known ?? {
      at: TOKEN_MODES[mode](target, this.opts.toolSchemas(obs.tools)),
      calledTool: false,
      ids: [],
    };
    this.episodes.set(rng, episode);
    const messages = known
      ? [
          {
            ...nextMessage(obs, episode.calledTool),
            ...(episode.calledTool && episode.callId ? { tool_call_id: episode.callId } : {}),
          },
        ]
      : firstMessages(this.opts.system, obs);
    const turn = await episode.at.turn(messages, {
      ...TRAINING_SAMPLING,
      max_tokens: maxTokens ?? 64,
      seed: rng.int(2 ** 31),
    });
    const answersAs = answeredModel(target);
    if (turn.model !== undefined && turn.model !== answersAs)
      throw new ServedModelMismatchError(
        `the endpoint answered as model ${JSON.stringify(turn.model)}; the rescue samples ${JSON.stringify(target.model)}, which it answers as ${JSON.stringify(answersAs)} (weight version ${this.opts.weightVersion})`,
      );
    checkStatedVersion(turn.weightVersion, this.opts.weightVersion);
    const sampled = target.client.sampled;
    sampled.turns++;
    sampled.promptTokens += extendsIds(turn.promptIds, episode.ids)
      ? turn.promptIds.length - episode.ids.length
      : turn.promptIds.length;
    sampled.completionTokens += turn.completionIds.length;
    episode.ids = [...turn.promptIds, ...turn.completionIds];
    const tokens = {
      promptIds: turn.promptIds,
      completionIds: turn.completionIds,
      logprobs: turn.logprobs,
      version: this.opts.weightVersion,
    };
    const choice = choiceOf(
      turn,
      obs.tools,
      this.opts.toolNames ?? {},
      turn.logprobs.reduce((a, b) => a + b, 0),
      tokens,
    );
    episode.calledTool = choice.action !== NO_TOOL_CALL;
    episode.callId = turn.callId;
    return choice;
  }

  /** Forgets the episode (the server holds nothing of it). */
  async endEpisode(rng: Rng): Promise<void> {
    this.episodes.delete(rng);
  }

  /**
   * The token rows of some samples, one entry each (undefined: no token of it trained): each
   * turn's whole prompt checked to extend the ids before it, a rollout split where one does not.
   * Under H0's context a rollout that reads otherwise there is re-scored there by the kind's
   * {@link BaseScoring} (messages in: H0's conversation rendered by the server, the same completion
   * ids scored after it by the server's prompt log-probabilities); a kind without one refuses it
   * (NOT_CONFIGURED). One that reads the same is as sampled.
   */
  async datums(batch: {
    samples: readonly UpdateSample[];
    settings: DatumSettings;
  }): Promise<(RolloutRows | undefined)[]> {
    const { settings } = batch;
    return Promise.all(
      batch.samples.map(async ({ rollout, advantage }, i) => {
        const steps = rollout.steps.filter((step) => step.tokens);
        const rescored =
          settings.rescueContext === "base" && steps.some((step) => readsDifferentlyUnderBase(step.observation));
        if (rescored && !this.opts.base)
          throw new NotConfiguredError(
            "this endpoint kind cannot score a prompt (no prompt log-probabilities): read the rows as sampled (context=sampled)",
          );
        const base = rescored ? await baseTurns(steps, this.opts, this.opts.target, this.opts.base!) : undefined;
        const turns = steps.map((step, j) => ({
          ...step.tokens!,
          ...(base ? { promptIds: base[j]!.promptIds, logprobs: base[j]!.logprobs } : {}),
          trained: !step.forced && !(settings.maskIntercepted && step.intercepted),
        }));
        const rows = segmentedDatums(`${rollout.id}#${i}`, rollout.taskId, turns, advantage);
        return rows.datums.length ? rows : undefined;
      }),
    );
  }
}
