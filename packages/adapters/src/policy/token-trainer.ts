import type { Policy, UpdateBatch, UpdateResult } from "@harness-s/core";
import type { PolicyStateV2 } from "@harness-s/core/protocol";
import type { TokenPolicyClient } from "./token-policy-client.ts";
import { TokenSampler, type TokenSamplerOptions } from "./token-sampler.ts";

/**
 * What training a policy at the worker adds to sampling it: the adapter it is created with, and the optimizer's rate.
 */
export interface TokenTrainerOptions extends TokenSamplerOptions {
  baseModel: string;
  lora: { rank: number; alpha: number; targets: string[] };
  seed: number;
  /**
   * AdamW learning rate for the adapter (default 3e-3, where the suite LM learned without collapsing; the trainer's own
   * `learningRate` is the embedded policy's).
   */
  learningRate?: number;
  /** The policy exists at the worker already: never create it (a re-attached unit). */
  attached?: boolean;
  /** Create it from this checkpoint (`<policy>/v<n>`, as `TokenPolicyClient.checkpoint` names it). */
  initFrom?: string;
}

/**
 * The {@link Policy} port over protocol v2: a {@link TokenSampler} that also creates its policy at
 * the worker (idempotently, on first use; or re-attaches one), trains it on exactly the ids it
 * sampled (`update`: a GRPO step on the datums, the worker's version moving by one), and frees it.
 *
 * @example
 * const policy = new TokenTrainer(client, { policyId: "run1-grpo-1", baseModel: "tiny", lora, seed: 1, system, toolSchemas });
 */
export class TokenTrainer extends TokenSampler implements Policy {
  private atWorker = false;

  constructor(
    client: TokenPolicyClient,
    private readonly training: TokenTrainerOptions,
  ) {
    super(client, training);
  }

  protected override open(): Promise<PolicyStateV2> {
    this.atWorker = true;
    const { policyId, baseModel, lora, seed, initFrom } = this.training;
    if (this.training.attached) return this.client.state(policyId);
    return this.client.create(policyId, {
      base_model: baseModel,
      lora,
      seed,
      ...(initFrom ? { init_from: initFrom } : {}),
    });
  }

  /** Frees the policy at the worker. */
  async release(): Promise<void> {
    if (this.atWorker) await this.client.remove(this.training.policyId);
  }

  async update(batch: UpdateBatch): Promise<UpdateResult> {
    await this.ensure();
    const datums = await this.datums(batch);
    if (datums.length === 0)
      return { version: this.current, metrics: { loss: 0, clippedFraction: 0, kl: 0, steps: 0 } };
    const job = await this.client.update(
      this.training.policyId,
      `${this.training.policyId}:from-v${batch.baseVersion}`,
      {
        base_version: batch.baseVersion,
        datums,
        loss: {
          clip_low: batch.settings.clipEpsilon,
          clip_high: batch.settings.clipEpsilon,
          kl_coef: batch.settings.klCoef,
        },
        optim: { lr: this.training.learningRate ?? 3e-3, epochs: batch.settings.epochs },
      },
    );
    this.current = job.version!;
    return {
      version: this.current,
      metrics: {
        loss: job.metrics!.loss,
        clippedFraction: job.metrics!.clip_fraction,
        kl: job.metrics!.kl,
        steps: datums.length,
      },
    };
  }
}
