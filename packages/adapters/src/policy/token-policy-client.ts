import { z } from "zod";
import {
  ConflictError,
  CreatePolicyV2,
  NotFoundError,
  PolicyStateV2,
  RenderRequestV2,
  RenderResponseV2,
  SampleRequestV2,
  SampleResponseV2,
  ScoreRequestV2,
  ScoreResponseV2,
  StalePolicyVersionError,
  UpdateAccepted,
  UpdateJobV2,
  UpdateRequestV2,
  type Clock,
} from "@harness-s/core";
import { PolicyEndpointError } from "../errors.ts";

const ErrorBody = z.object({ error: z.object({ code: z.string(), message: z.string() }) });

/**
 * A client of a protocol-v2 policy worker (`harness-s policy-worker`, or any server speaking
 * docs/design.md §5). Every request and answer is validated with the core schemas; the worker's
 * errors become domain errors (409 on a version → {@link StalePolicyVersionError}, 409 on a
 * create → {@link ConflictError}, 404 → {@link NotFoundError}).
 *
 * @example
 * const worker = new TokenPolicyClient("http://127.0.0.1:8765", { token, clock: systemClock });
 * await worker.create("exp1-grpo-1", { base_model: "tiny", lora: { rank: 8, alpha: 16, targets: ["q_proj", "v_proj"] } });
 */
export class TokenPolicyClient {
  constructor(
    readonly baseUrl: string,
    private readonly opts: { token?: string; clock: Clock; timeoutMs?: number; pollMs?: number },
  ) {}

  create(id: string, spec: z.input<typeof CreatePolicyV2>) {
    return this.call("PUT", `/v2/policies/${encodeURIComponent(id)}`, PolicyStateV2, CreatePolicyV2.parse(spec));
  }

  state(id: string) {
    return this.call("GET", `/v2/policies/${encodeURIComponent(id)}`, PolicyStateV2);
  }

  async remove(id: string): Promise<void> {
    await this.call("DELETE", `/v2/policies/${encodeURIComponent(id)}`, z.object({ deleted: z.string() }));
  }

  sample(id: string, req: SampleRequestV2) {
    return this.call("POST", `/v2/policies/${encodeURIComponent(id)}/sample`, SampleResponseV2, SampleRequestV2.parse(req));
  }

  async render(id: string, req: z.input<typeof RenderRequestV2>): Promise<number[]> {
    return (await this.call("POST", `/v2/policies/${encodeURIComponent(id)}/render`, RenderResponseV2, RenderRequestV2.parse(req))).ids;
  }

  async score(id: string, req: z.input<typeof ScoreRequestV2>): Promise<number[][]> {
    return (await this.call("POST", `/v2/policies/${encodeURIComponent(id)}/score`, ScoreResponseV2, ScoreRequestV2.parse(req))).logprobs;
  }

  /** Submits an update job; the same key returns the same job (a retry never meets a 409). */
  submitUpdate(id: string, key: string, req: UpdateRequestV2) {
    return this.call("POST", `/v2/policies/${encodeURIComponent(id)}/updates`, UpdateAccepted, UpdateRequestV2.parse(req), { "idempotency-key": key });
  }

  job(updateId: string) {
    return this.call("GET", `/v2/updates/${encodeURIComponent(updateId)}`, UpdateJobV2);
  }

  /** Submits (or re-finds, by key) the update and polls it until it is done; a failed job throws. */
  async update(id: string, key: string, req: UpdateRequestV2, timeoutMs = 600_000): Promise<UpdateJobV2> {
    const { update_id } = await this.submitUpdate(id, key, req);
    const deadline = this.opts.clock.now() + timeoutMs;
    for (;;) {
      const job = await this.job(update_id);
      if (job.status === "done") return job;
      if (job.status === "failed") throw new PolicyEndpointError(`update ${update_id} of ${id} failed: ${job.error ?? "no reason given"}`);
      if (this.opts.clock.now() > deadline) throw new PolicyEndpointError(`update ${update_id} of ${id} did not finish within ${timeoutMs} ms`);
      await this.opts.clock.sleep(this.opts.pollMs ?? 20);
    }
  }

  private async call<S extends z.ZodType>(method: string, path: string, schema: S, body?: unknown, headers: Record<string, string> = {}): Promise<z.infer<S>> {
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...(this.opts.token ? { authorization: `Bearer ${this.opts.token}` } : {}), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.opts.timeoutMs ?? 120_000),
      });
    } catch (err) {
      throw new PolicyEndpointError(`${method} ${path}: ${(err as Error).message}`, { cause: err });
    }
    const text = await res.text();
    if (!res.ok) {
      const detail = ErrorBody.safeParse(safeJson(text));
      const message = detail.success ? detail.data.error.message : text.slice(0, 200);
      if (res.status === 409 && detail.success && detail.data.error.code === "STALE_POLICY_VERSION") throw new StalePolicyVersionError(-1, -1, message);
      if (res.status === 409) throw new ConflictError(`${method} ${path}: ${message}`);
      if (res.status === 404) throw new NotFoundError("policy resource", path);
      throw new PolicyEndpointError(`${method} ${path}: HTTP ${res.status} ${message}`, undefined, res.status);
    }
    const parsed = schema.safeParse(safeJson(text));
    if (!parsed.success) throw new PolicyEndpointError(`${method} ${path}: unexpected answer ${text.slice(0, 200)}`);
    return parsed.data;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
