import {
  ValidationError,
  datumFromTurns,
  withNotes,
  type ActionChoice,
  type Datum,
  type Policy,
  type PolicyObservation,
  type Rng,
  type SampleResponseV2,
  type ToolSchema,
  type UpdateBatch,
  type UpdateResult,
} from "@harness-s/core";
import { INVALID_TOOL_CALL, NO_TOOL_CALL, UNKNOWN_TOOL_PREFIX } from "../llm/openai-policy.ts";
import type { TokenPolicyClient } from "./token-policy-client.ts";

export interface TokenPolicyOptions {
  /** The policy's id at the worker (created on first use, idempotently). */
  policyId: string;
  baseModel: string;
  lora: { rank: number; alpha: number; targets: string[] };
  seed: number;
  system: string;
  /** The tools of a task's environment as JSON schemas (the function name is the action). */
  toolSchemas: (tools: readonly string[]) => ToolSchema[];
  maxTokens?: number;
  /** AdamW learning rate for the adapter (the trainer's own `learningRate` is the embedded policy's). */
  learningRate?: number;
  /** Sample only at this version (a dispatch worker's rollout asked for it); the worker answers 409 otherwise. */
  expectVersion?: number;
  /** The policy exists at the worker already: never create it (a dispatch worker, a re-attached unit). */
  attached?: boolean;
  /** Create it from this checkpoint (`<policy>/v<n>`, as `TokenPolicyClient.checkpoint` names it). */
  initFrom?: string;
}

interface Episode {
  id: string;
  calledTool: boolean;
}

/**
 * The {@link Policy} port over protocol v2: a policy at a token-level worker (the reference
 * Python worker, a GPU endpoint). Each episode keeps its token prefix at the worker; an episode
 * is known by the per-episode `Rng` the episode runner passes on every turn, so no id has to
 * travel through the runner. A turn appends the tool output (with the harness's notes and
 * hints) as a message, samples at the published version (temperature 1, top_p 1), and maps the
 * parsed tool call to an action; a call the worker could not parse, an unknown tool or no call
 * at all is a failed round (`invalid`, `unknown:<name>`, `no-tool-call`). The step keeps its
 * ids and log-probabilities; `update` trains on exactly those ids (mask 1 on sampled tokens,
 * 0 on prompts, tool results, notes, forced and — with `maskIntercepted` — intercepted turns).
 *
 * @example
 * const policy = new TokenPolicy(client, { policyId: "run1-grpo-1", baseModel: "tiny", lora, seed: 1, system, toolSchemas });
 */
export class TokenPolicy implements Policy {
  private current = 0;
  private created?: Promise<void>;
  private readonly episodes = new WeakMap<Rng, Episode>();
  private counter = 0;

  constructor(
    private readonly client: TokenPolicyClient,
    private readonly opts: TokenPolicyOptions,
  ) {}

  /** The policy's id at the worker. */
  get id(): string {
    return this.opts.policyId;
  }

  version(): number {
    return this.opts.expectVersion ?? this.current;
  }

  /** Creates the policy at the worker (once), or reads the version of an attached one. */
  ensure(): Promise<void> {
    this.created ??= (
      this.opts.attached
        ? this.client.state(this.opts.policyId)
        : this.client.create(this.opts.policyId, {
            base_model: this.opts.baseModel,
            lora: this.opts.lora,
            seed: this.opts.seed,
            ...(this.opts.initFrom ? { init_from: this.opts.initFrom } : {}),
          })
    ).then((s) => {
      this.current = s.version;
    });
    return this.created;
  }

  /** Frees the policy at the worker. */
  async release(): Promise<void> {
    if (this.created) await this.client.remove(this.opts.policyId);
  }

  async act(obs: PolicyObservation, rng: Rng): Promise<ActionChoice> {
    await this.ensure();
    const known = this.episodes.get(rng);
    const episode = known ?? { id: `${this.opts.policyId}.e${++this.counter}`, calledTool: false };
    this.episodes.set(rng, episode);
    const message = this.turnText(obs);
    const sampling = { temperature: 1, top_p: 1, max_tokens: this.opts.maxTokens ?? 64, seed: rng.int(2 ** 31) };
    const version = { exact: this.version() };
    const s = known
      ? await this.client.sample(this.opts.policyId, {
          episode_id: episode.id,
          version,
          append: [episode.calledTool ? { role: "tool", content: message } : { role: "user", content: message }],
          sampling,
        })
      : await this.client.sample(this.opts.policyId, {
          episode_id: episode.id,
          version,
          messages: [
            { role: "system", content: this.opts.system },
            { role: "user", content: [obs.instruction ?? "", message].filter(Boolean).join("\n\n") },
          ],
          tools: this.opts.toolSchemas(obs.tools),
          sampling,
        });
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

  private turnText(obs: PolicyObservation): string {
    const hints = obs.hints.filter((h) => !(obs.notes ?? []).some((n) => n.includes(h))).map((h) => `suggested next tool: ${h}`);
    return withNotes(obs.text ?? obs.event, [...(obs.notes ?? []), ...hints]);
  }

  private choice(s: SampleResponseV2, tools: readonly string[]): ActionChoice {
    const tokens = { promptIds: s.prompt_ids, completionIds: s.completion.ids, logprobs: s.completion.logprobs, version: s.policy_version };
    const logProb = s.completion.logprobs.reduce((a, b) => a + b, 0);
    if (s.completion.parse_error) return { action: INVALID_TOOL_CALL, args: { raw: s.completion.text, error: s.completion.parse_error }, logProb, tokens };
    const call = s.completion.tool_calls?.[0];
    if (!call) return { action: NO_TOOL_CALL, args: { content: s.completion.content }, logProb, tokens };
    if (!tools.includes(call.function.name)) return { action: `${UNKNOWN_TOOL_PREFIX}${call.function.name}`, args: { raw: call.function.arguments }, logProb, tokens };
    try {
      return { action: call.function.name, args: JSON.parse(call.function.arguments || "{}") as Record<string, unknown>, logProb, tokens };
    } catch (err) {
      return { action: INVALID_TOOL_CALL, args: { raw: call.function.arguments, error: (err as Error).message }, logProb, tokens };
    }
  }

  /** The datums of one batch: per rollout, its turns' ids in order; samples without sampled tokens are left out. */
  datums(batch: UpdateBatch): Datum[] {
    if (batch.settings.rescueContext === "base")
      throw new ValidationError("update", ['rescueContext: "base" needs re-rendering in H0\'s context, which token-level policies do not do yet; use "as-generated"']);
    return batch.samples.flatMap((sample, i) => {
      const turns = sample.rollout.steps.flatMap((step) =>
        step.tokens
          ? [
              {
                promptIds: step.tokens.promptIds,
                completionIds: step.tokens.completionIds,
                logprobs: step.tokens.logprobs,
                trained: !step.forced && !(batch.settings.maskIntercepted && step.intercepted),
              },
            ]
          : [],
      );
      if (!turns.some((t) => t.trained && t.completionIds.length > 0)) return [];
      return [datumFromTurns(`${sample.rollout.id}#${i}`, sample.rollout.taskId, turns, sample.advantage)];
    });
  }

  async update(batch: UpdateBatch): Promise<UpdateResult> {
    await this.ensure();
    const datums = this.datums(batch);
    if (datums.length === 0) return { version: this.current, metrics: { loss: 0, clippedFraction: 0, kl: 0, steps: 0 } };
    const job = await this.client.update(this.opts.policyId, `${this.opts.policyId}:from-v${batch.baseVersion}`, {
      base_version: batch.baseVersion,
      datums,
      loss: { clip_low: batch.settings.clipEpsilon, clip_high: batch.settings.clipEpsilon, kl_coef: batch.settings.klCoef },
      optim: { lr: this.opts.learningRate ?? 1e-2, epochs: batch.settings.epochs },
    });
    this.current = job.version!;
    return { version: this.current, metrics: { loss: job.metrics!.loss, clippedFraction: job.metrics!.clip_fraction, kl: job.metrics!.kl, steps: datums.length } };
  }
}
