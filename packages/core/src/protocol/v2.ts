import { CONTEXT_WEIGHT_BOUND } from "../rollout/context-correction.ts";
import { z } from "zod";
import { parseOrThrow } from "../errors.ts";
import { appendAll } from "../util/append.ts";

/**
 * Protocol v2 of the policy endpoint (docs/design.md §5): token in, token out. The worker owns the
 * tokenizer, the chat template and the tool-call parser; this side stores the token ids it was
 * given and sends exactly those back for training. Every sampled token carries its behaviour
 * log-probability and the version that sampled it; loss masks are per token; updates are
 * idempotent jobs.
 *
 * - `PUT    /v2/policies/{id}`          {@link CreatePolicyV2} → {@link PolicyStateV2}
 * - `GET    /v2/policies/{id}`          → {@link PolicyStateV2};  `DELETE` frees it
 * - `POST   /v2/policies/{id}/sample`   {@link SampleRequestV2} → {@link SampleResponseV2}
 * - `POST   /v2/policies/{id}/render`   {@link RenderRequestV2} → `{ids}`
 * - `POST   /v2/policies/{id}/score`    {@link ScoreRequestV2} → `{logprobs}`
 * - `POST   /v2/policies/{id}/replay`   {@link ReplayRequestV2} → {@link ReplayResponseV2}
 * - `POST   /v2/policies/{id}/updates`  {@link UpdateRequestV2} + `Idempotency-Key` → 202 {@link UpdateAccepted}
 * - `GET    /v2/updates/{id}`           → {@link UpdateJobV2}
 * - `POST   /v2/policies/{id}/checkpoints` → `{version, path}`
 * - `POST   /v1/chat/completions`       OpenAI-compatible, `model: "{id}@v{n}"`, with token ids
 */
export const PolicyIdV2 = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.:@+=-]{0,199}$/, "letters, digits and _ . : @ + = - (no '/')");

export const CreatePolicyV2 = z
  .object({
    base_model: z.string().min(1),
    lora: z
      .object({
        rank: z.number().int().min(1).max(256).default(8),
        alpha: z.number().positive().default(16),
        targets: z
          .array(
            z
              .string()
              .regex(/^[A-Za-z0-9_][A-Za-z0-9_.]{0,199}$/, "a module name (q_proj, model.layers.0.mlp.up_proj)"),
          )
          .min(1)
          .max(64)
          .default(["q_proj", "v_proj"]),
      })
      .strict()
      .prefault({}),
    seed: z.number().int().default(0),
    /** A checkpoint as `POST …/checkpoints` names it: `<policy id>/v<version>`. */
    init_from: z
      .string()
      .regex(
        /^[A-Za-z0-9][A-Za-z0-9_.:@+=-]{0,199}\/v[0-9]{1,9}$/,
        "<policy id>/v<version>, as POST …/checkpoints names it",
      )
      .optional(),
  })
  .strict();
export type CreatePolicyV2 = z.infer<typeof CreatePolicyV2>;

export const PolicyStateV2 = z.object({
  policy_id: z.string(),
  version: z.number().int().min(0),
  /** `vocab_size`, when the worker states it: every id it answers is below it. */
  tokenizer: z.object({
    name: z.string(),
    eos_ids: z.array(z.number().int()),
    vocab_size: z.number().int().min(1).optional(),
  }),
  /** How the worker renders turns with the model's chat template (see the worker's chat.py). */
  template: z
    .object({ prefix_stable: z.boolean(), note: z.string(), tool_parser: z.string() })
    .passthrough()
    .optional(),
  /** Episodes the worker holds for this policy (closed when they end, or at the next update). */
  open_episodes: z.number().int().min(0).optional(),
  capabilities: z.record(z.string(), z.boolean()),
});
export type PolicyStateV2 = z.infer<typeof PolicyStateV2>;

export const ChatMessage = z
  .object({
    role: z.enum(["system", "user", "assistant", "tool"]),
    content: z.string().nullable().optional(),
    tool_call_id: z.string().optional(),
  })
  .passthrough();
export type ChatMessage = z.infer<typeof ChatMessage>;

export const ToolSchema = z.object({
  type: z.literal("function"),
  function: z.object({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()),
  }),
});
export type ToolSchema = z.infer<typeof ToolSchema>;

/** A token id, and a mask entry (1: this token counts). */
export const TokenId = z.number().int().min(0);
const MaskBit = z.union([z.literal(0), z.literal(1)]);

/**
 * How far above 0 a log-probability may read (float error in a worker's log-softmax); anything higher is not a
 * log-probability.
 */
export const LOGPROB_SLACK = 1e-3;
export const LogProb = z.number().max(LOGPROB_SLACK, "a log-probability is at most 0");

/**
 * The most ids one turn of an answer may carry (its prompt, or its completion): twice a 128k
 * context. A reply with more is refused as it arrives, before anything is stored.
 */
export const MAX_TURN_IDS = 1 << 18;
export const TurnIds = z.array(TokenId).max(MAX_TURN_IDS, `at most ${MAX_TURN_IDS} ids in one turn`);

export const VersionWanted = z.union([
  z.object({ exact: z.number().int().min(0) }).strict(),
  z.object({ min: z.number().int().min(0) }).strict(),
]);

/** How training rollouts sample: temperature 1, top_p 1 (the behaviour log-probabilities are then exact). */
export const TRAINING_SAMPLING = { temperature: 1, top_p: 1 } as const;

export const Sampling = z
  .object({
    temperature: z.number().min(0).max(5).default(TRAINING_SAMPLING.temperature),
    top_p: z.number().gt(0).max(1).default(TRAINING_SAMPLING.top_p),
    max_tokens: z.number().int().min(1).max(4096).default(64),
    seed: z.number().int().min(0).optional(),
    /** "eval" samples are not kept for a later update (the worker frees the episode's turns). */
    purpose: z.enum(["train", "eval"]).default("train"),
  })
  .strict();

export const SampleRequestV2 = z
  .object({
    episode_id: PolicyIdV2,
    version: VersionWanted.optional(),
    /** The first turn; later turns send `append` (tool results, harness notes). */
    messages: z.array(ChatMessage).optional(),
    append: z.array(ChatMessage).optional(),
    tools: z.array(ToolSchema).optional(),
    sampling: Sampling.prefault({}),
    /**
     * On the first turn (with `tools`): every turn of the episode is one call of one of them, its arguments fitting the
     * tool's schema.
     */
    constrain_tool_calls: z.boolean().default(false),
  })
  .strict()
  .refine(
    (r) => (r.messages === undefined) !== (r.append === undefined),
    "exactly one of messages (first turn) or append (later turns)",
  );
export type SampleRequestV2 = z.input<typeof SampleRequestV2>;

export const ToolCall = z.object({
  id: z.string(),
  type: z.literal("function"),
  function: z.object({ name: z.string(), arguments: z.string() }),
});
export type ToolCall = z.infer<typeof ToolCall>;

/** The most device time one sample or update may report: an hour (more is a worker's error, refused). */
export const DEVICE_MS_MAX = 3_600_000;

export const SampleResponseV2 = z.object({
  policy_version: z.number().int().min(0),
  /** The ids this turn appended before sampling (the rendered prompt or the appended messages). */
  prompt_ids: TurnIds,
  completion: z
    .object({
      ids: TurnIds,
      logprobs: z.array(LogProb).max(MAX_TURN_IDS),
      text: z.string(),
      content: z.string(),
      finish_reason: z.enum(["stop", "length"]),
      tool_calls: z.array(ToolCall).optional(),
      /** The text held a tool call the parser could not read: a failed round, not a crash. */
      parse_error: z.string().optional(),
    })
    .refine((c) => c.ids.length === c.logprobs.length, "one log-probability per sampled token"),
  /** The device time this turn's share of the worker's forward passes took (metered as GPU seconds). */
  usage: z.object({ device_ms: z.number().min(0).max(DEVICE_MS_MAX) }).optional(),
});
export type SampleResponseV2 = z.infer<typeof SampleResponseV2>;

export const RenderRequestV2 = z
  .object({
    messages: z.array(ChatMessage),
    tools: z.array(ToolSchema).optional(),
    add_generation_prompt: z.boolean().default(false),
  })
  .strict();
export const RenderResponseV2 = z.object({ ids: z.array(TokenId) });
export const ScoreRequestV2 = z
  .object({
    version: VersionWanted.optional(),
    /** `mask` (1 = score this token) defaults to every token after the first. */
    sequences: z.array(z.object({ ids: z.array(TokenId).min(1), mask: z.array(MaskBit).optional() }).strict()).min(1),
  })
  .strict();
export const ScoreResponseV2 = z.object({ logprobs: z.array(z.array(LogProb)) });

/**
 * An episode's sampled completions under other messages (a rescued rollout in H0's context):
 * the worker rebuilds each turn's prompt ids as sampling would have, and scores the completions
 * there at the published version.
 */
export const ReplayRequestV2 = z
  .object({
    version: VersionWanted.optional(),
    messages: z.array(ChatMessage).min(1),
    tools: z.array(ToolSchema).optional(),
    turns: z
      .array(
        z
          .object({ append: z.array(ChatMessage).optional(), completion_ids: z.array(z.number().int().min(0)).min(1) })
          .strict(),
      )
      .min(1)
      .max(512),
    /** The turns were sampled with `constrain_tool_calls`: scored under the same constraint. */
    constrain_tool_calls: z.boolean().default(false),
  })
  .strict();
export type ReplayRequestV2 = z.infer<typeof ReplayRequestV2>;
export const ReplayResponseV2 = z.object({
  turns: z.array(z.object({ prompt_ids: TurnIds, logprobs: z.array(LogProb).max(MAX_TURN_IDS) })),
});
export type ReplayResponseV2 = z.infer<typeof ReplayResponseV2>;

/** One trained sequence: exactly the ids the sampler produced, mask 1 only on sampled tokens. */
export const Datum = z
  .object({
    sample_id: z.string().min(1),
    group_id: z.string().min(1),
    ids: z.array(TokenId).min(2),
    loss_mask: z.array(MaskBit),
    /** Log-probabilities (≤ 0; a sliver above it for float error). */
    behaviour_logprobs: z.array(LogProb),
    advantage: z.number().min(-1e4).max(1e4),
    /**
     * Per-token weights on the advantage (the importance correction of a row re-scored in H0's
     * context, `CONTEXT_CORRECTIONS`), one per id, each in [0, CONTEXT_WEIGHT_BOUND]; absent: all 1.
     */
    token_weights: z.array(z.number().min(0).max(CONTEXT_WEIGHT_BOUND)).optional(),
    /** The tools its turns were sampled constrained to: the trainer scores the same constrained distribution. */
    constraint: z
      .object({ tools: z.array(ToolSchema).min(1).max(256) })
      .strict()
      .optional(),
  })
  .refine(
    (d) => d.ids.length === d.loss_mask.length && d.ids.length === d.behaviour_logprobs.length,
    "ids, loss_mask and behaviour_logprobs have one entry per token",
  )
  .refine((d) => d.loss_mask[0] === 0, "the first token is never trained on")
  .refine(
    (d) => d.token_weights === undefined || d.token_weights.length === d.ids.length,
    "token_weights has one entry per token",
  );
export type Datum = z.infer<typeof Datum>;

export const UpdateRequestV2 = z
  .object({
    base_version: z.number().int().min(0),
    datums: z.array(Datum).min(1),
    loss: z
      .object({
        kind: z.literal("ppo").default("ppo"),
        clip_low: z.number().min(0).max(1).default(0.2),
        clip_high: z.number().min(0).max(10).default(0.2),
        /**
         * token-mean, sequence-mean, or constant (Dr. GRPO: a fixed divisor, `normaliser`, default the longest datum).
         */
        agg: z.enum(["token-mean", "sequence-mean", "constant"]).default("token-mean"),
        kl_coef: z.number().min(0).default(0),
        normaliser: z.number().positive().optional(),
      })
      .strict()
      .prefault({}),
    optim: z
      .object({
        lr: z.number().positive().max(1),
        betas: z.tuple([z.number(), z.number()]).default([0.9, 0.999]),
        weight_decay: z.number().min(0).default(0),
        max_grad_norm: z.number().positive().default(1),
        epochs: z.number().int().min(1).max(16).default(1),
        /**
         * Padded tokens per micro-batch; gradients accumulate over them before the step (memory is one micro-batch's).
         */
        micro_batch_tokens: z
          .number()
          .int()
          .min(1)
          .max(1 << 20)
          .default(8192),
        gradient_checkpointing: z.boolean().default(false),
      })
      .strict(),
  })
  .strict();
export type UpdateRequestV2 = z.input<typeof UpdateRequestV2>;

export const UpdateAccepted = z.object({ update_id: z.string().min(1), status: z.string(), created: z.boolean() });

export const UpdateMetricsV2 = z.object({
  loss: z.number(),
  clip_fraction: z.number(),
  kl: z.number(),
  grad_norm: z.number(),
  tokens: z.number().int(),
  sampler_trainer_logprob_absdiff: z.number(),
  /** Device time of the update (metered as GPU seconds). */
  device_ms: z.number().min(0).max(DEVICE_MS_MAX).optional(),
});
export const UpdateJobV2 = z.object({
  update_id: z.string(),
  policy_id: z.string(),
  status: z.enum(["queued", "running", "done", "failed"]),
  base_version: z.number().int(),
  version: z.number().int().nullable(),
  metrics: UpdateMetricsV2.nullable(),
  error: z.string().nullable(),
});
export type UpdateJobV2 = z.infer<typeof UpdateJobV2>;

/**
 * The datum for one sampled turn sequence: the episode's ids as the worker gave them (prompt ids
 * and completion ids of every turn, in order), mask 1 exactly on completion ids of turns that
 * count (`trained`), behaviour log-probabilities from the sampler, and per-token advantage weights
 * where a turn has some other than 1 (`token_weights`). No text is tokenised here.
 *
 * @example
 * const d = datumFromTurns("s1", "g1", turns, 0.8);
 */
export function datumFromTurns(
  sampleId: string,
  groupId: string,
  turns: readonly {
    promptIds: readonly number[];
    completionIds: readonly number[];
    logprobs: readonly number[];
    trained: boolean;
    weights?: readonly number[];
  }[],
  advantage: number,
): Datum {
  const ids: number[] = [];
  const mask: (0 | 1)[] = [];
  const behaviour: number[] = [];
  const weighted = turns.some((t) => t.weights?.some((w) => w !== 1));
  const weights: number[] = [];
  for (const t of turns) {
    if (weighted)
      appendAll(weights, [...t.promptIds.map(() => 1), ...t.completionIds.map((_, i) => t.weights?.[i] ?? 1)]);
    appendAll(ids, t.promptIds);
    appendAll(
      mask,
      t.promptIds.map(() => 0 as const),
    );
    appendAll(
      behaviour,
      t.promptIds.map(() => 0),
    );
    appendAll(ids, t.completionIds);
    appendAll(
      mask,
      t.completionIds.map(() => (t.trained ? 1 : 0) as 0 | 1),
    );
    appendAll(behaviour, t.logprobs);
  }
  return parseOrThrow(
    Datum,
    {
      sample_id: sampleId,
      group_id: groupId,
      ids,
      loss_mask: mask,
      behaviour_logprobs: behaviour,
      advantage,
      ...(weighted ? { token_weights: weights } : {}),
    },
    `the token row of ${sampleId}`,
  );
}
