import { z } from "zod";
import { ConflictError, formatIssues, parseOrThrow, NotFoundError } from "@harness-s/core";
import { StalePolicyVersionError } from "@harness-s/core/dispatch";
import {
  CreatePolicyV2,
  PolicyStateV2,
  RenderRequestV2,
  RenderResponseV2,
  ReplayRequestV2,
  ReplayResponseV2,
  SampleRequestV2,
  SampleResponseV2,
  ScoreRequestV2,
  ScoreResponseV2,
  UpdateAccepted,
  UpdateJobV2,
  UpdateRequestV2,
} from "@harness-s/core/protocol";
import {
  PolicyEndpointError,
  PolicyReplyInvalidError,
  PolicyWorkerRefusedError,
  WORKER_ERROR_CODES,
} from "../errors.ts";
import { scrubError, secretScrubber } from "./scrub-secrets.ts";
import { safeJson, sendJson, type JsonTransportOptions } from "./json-transport.ts";

const ErrorBody = z.object({ error: z.object({ code: z.string(), message: z.string() }) });
/**
 * What a worker's 409 on a version states beside its code: the version its policy holds and the one the request wanted
 * (the reference worker states both).
 */
const StaleVersions = z.object({
  error: z.object({ held_version: z.number().int().min(0), wanted_version: z.number().int().min(0) }),
});
const Checkpoint = z.object({ version: z.number().int(), checkpoint: z.string() });

/** At most `limit` calls run at once; the rest wait their turn, in order. */
class Gate {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  async run<T>(call: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running++;
    try {
      return await call();
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }
}

export interface TokenPolicyClientOptions extends JsonTransportOptions {
  /** Per-request timeout; a request waiting its turn at the client (see `maxInFlight`) is not yet timed. */
  timeoutMs?: number;
  pollMs?: number;
  /**
   * Samples and scores in flight at once (default 32): more wait here rather than queue at the
   * worker, so none times out because others were ahead of it. The worker batches what it gets.
   */
  maxInFlight?: number;
  /** Hears of the device time each sample and update reported (the cost-of-goods meter's GPU seconds). */
  onDeviceSeconds?: (seconds: number) => void;
  /**
   * Hears of the tokens each sample processed (its appended prompt and its completion) and each finished update trained
   * on (its sequences × epochs): what an experiment is quoted on.
   */
  onTokens?: (tokens: { sampledTokens?: number; trainedTokens?: number; generatedTokens?: number }) => void;
  /**
   * How often a request that is safe to repeat (a read, a keyed sample, a keyed update) is sent
   * again after a dropped connection, a timeout or a 500/502/503/504 (default 3), waiting 100 ms,
   * 200 ms, 400 ms … between; a sample without a key is never repeated.
   */
  retries?: number;
}

/**
 * A client of a protocol-v2 policy worker (`harness-s policy-worker`, or any server speaking
 * docs/design.md §5). Every request and answer is validated with the core schemas; the worker's
 * errors become domain errors (409 on a version → {@link StalePolicyVersionError} with the
 * versions the worker states, held and wanted; 409 on a create → {@link ConflictError}, 404 →
 * {@link NotFoundError}).
 *
 * @example
 * const worker = new TokenPolicyClient("http://127.0.0.1:8765", { token, clock: systemClock });
 * await worker.create("exp1-grpo-1", { base_model: "tiny", lora: { rank: 8, alpha: 16, targets: ["q_proj", "v_proj"] } });
 */
export class TokenPolicyClient {
  private readonly gate: Gate;
  /**
   * What this client has sampled so far: turns, the prompt and completion tokens they carried, and the time spent
   * waiting for them, answered or not.
   */
  readonly sampled = { turns: 0, promptTokens: 0, completionTokens: 0, ms: 0 };

  private readonly scrub: (text: string) => string;

  constructor(
    readonly baseUrl: string,
    private readonly opts: TokenPolicyClientOptions,
  ) {
    this.gate = new Gate(opts.maxInFlight ?? 32);
    this.scrub = secretScrubber([opts.token, ...Object.values(opts.headers ?? {})]);
  }

  create(id: string, spec: z.input<typeof CreatePolicyV2>) {
    return this.call("PUT", `/v2/policies/${encodeURIComponent(id)}`, PolicyStateV2, CreatePolicyV2.parse(spec));
  }

  state(id: string) {
    return this.call("GET", `/v2/policies/${encodeURIComponent(id)}`, PolicyStateV2);
  }

  async remove(id: string): Promise<void> {
    await this.call("DELETE", `/v2/policies/${encodeURIComponent(id)}`, z.object({ deleted: z.string() }));
  }

  /**
   * One turn. With `key` (unique to the episode's turn) the request is repeated after a lost
   * reply and the worker answers a repeat with the turn it already sampled: never a second turn.
   */
  async sample(id: string, req: SampleRequestV2, key?: string) {
    const body = parseOrThrow(SampleRequestV2, req, "a sample request");
    const headers: Record<string, string> = key === undefined ? {} : { "idempotency-key": key };
    const s = await this.gate.run(async () => {
      const started = this.opts.clock.now();
      try {
        return await this.call(
          "POST",
          `/v2/policies/${encodeURIComponent(id)}/sample`,
          SampleResponseV2,
          body,
          headers,
        );
      } finally {
        this.sampled.ms += this.opts.clock.now() - started;
      }
    });
    this.sampled.turns++;
    this.sampled.promptTokens += s.prompt_ids.length;
    this.sampled.completionTokens += s.completion.ids.length;
    if (s.usage) this.opts.onDeviceSeconds?.(s.usage.device_ms / 1000);
    this.opts.onTokens?.({
      sampledTokens: s.prompt_ids.length + s.completion.ids.length,
      generatedTokens: s.completion.ids.length,
    });
    return s;
  }

  /** Closes an episode: the worker forgets its ids and its KV cache. */
  async closeEpisode(id: string, episodeId: string): Promise<void> {
    await this.call(
      "DELETE",
      `/v2/policies/${encodeURIComponent(id)}/episodes/${encodeURIComponent(episodeId)}`,
      z.object({ closed: z.boolean() }),
    );
  }

  /** Saves the policy (adapter, optimizer state, version) in the worker's state folder: `init_from` restores it. */
  checkpoint(id: string) {
    return this.call("POST", `/v2/policies/${encodeURIComponent(id)}/checkpoints`, Checkpoint);
  }

  async render(id: string, req: z.input<typeof RenderRequestV2>): Promise<number[]> {
    return (
      await this.call(
        "POST",
        `/v2/policies/${encodeURIComponent(id)}/render`,
        RenderResponseV2,
        parseOrThrow(RenderRequestV2, req, "a render request"),
      )
    ).ids;
  }

  async score(id: string, req: z.input<typeof ScoreRequestV2>): Promise<number[][]> {
    const body = parseOrThrow(ScoreRequestV2, req, "a score request");
    return (
      await this.gate.run(() =>
        this.call("POST", `/v2/policies/${encodeURIComponent(id)}/score`, ScoreResponseV2, body),
      )
    ).logprobs;
  }

  /** Each turn's prompt ids and completion log-probabilities under other messages (see {@link ReplayRequestV2}). */
  async replay(id: string, req: z.input<typeof ReplayRequestV2>): Promise<ReplayResponseV2["turns"]> {
    const body = parseOrThrow(ReplayRequestV2, req, "a replay request");
    return (
      await this.gate.run(() =>
        this.call("POST", `/v2/policies/${encodeURIComponent(id)}/replay`, ReplayResponseV2, body),
      )
    ).turns;
  }

  /** Submits an update job; the same key returns the same job (a retry never meets a 409). */
  submitUpdate(id: string, key: string, req: UpdateRequestV2) {
    return this.call(
      "POST",
      `/v2/policies/${encodeURIComponent(id)}/updates`,
      UpdateAccepted,
      parseOrThrow(UpdateRequestV2, req, "an update request"),
      { "idempotency-key": key },
    );
  }

  /** The job; with `waitS`, the worker answers when it finishes or after that long (a long poll). */
  job(updateId: string, waitS = 0) {
    return this.call("GET", `/v2/updates/${encodeURIComponent(updateId)}${waitS ? `?wait=${waitS}` : ""}`, UpdateJobV2);
  }

  /** Submits (or re-finds, by key) the update and polls it until it is done; a failed job throws. */
  async update(id: string, key: string, req: UpdateRequestV2, timeoutMs = 600_000): Promise<UpdateJobV2> {
    const { update_id } = await this.submitUpdate(id, key, req);
    const deadline = this.opts.clock.now() + timeoutMs;
    for (;;) {
      const job = await this.job(update_id, 5);
      if (job.status === "done") {
        if (job.metrics?.device_ms !== undefined) this.opts.onDeviceSeconds?.(job.metrics.device_ms / 1000);
        this.opts.onTokens?.({
          trainedTokens: req.datums.reduce((n, d) => n + d.ids.length, 0) * (req.optim?.epochs ?? 1),
        });
        return job;
      }
      if (job.status === "failed")
        throw new PolicyEndpointError(`update ${update_id} of ${id} failed: ${job.error ?? "no reason given"}`);
      if (this.opts.clock.now() > deadline)
        throw new PolicyEndpointError(`update ${update_id} of ${id} did not finish within ${timeoutMs} ms`);
      await this.opts.clock.sleep(this.opts.pollMs ?? 20);
    }
  }

  /** One request; any text the endpoint sent back reaches an error's message only with this client's secrets masked. */
  private async call<S extends z.ZodType>(
    method: string,
    path: string,
    schema: S,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<z.infer<S>> {
    try {
      return await this.exchange(method, path, schema, body, headers);
    } catch (err) {
      throw scrubError(err, this.scrub);
    }
  }

  private async exchange<S extends z.ZodType>(
    method: string,
    path: string,
    schema: S,
    body: unknown,
    headers: Record<string, string>,
  ): Promise<z.infer<S>> {
    const repeatable = method !== "POST" || "idempotency-key" in headers || !path.endsWith("/sample");
    const res = await sendJson(this.opts, this.baseUrl, path, method, body, headers, repeatable);
    // An answer's text is cut to size only once the secrets are masked in it (never half a secret left at the cut).
    if (!res.ok) refused(method, path, res.status, this.scrub(res.text));
    const json = safeJson(res.text);
    if (json === undefined)
      throw new PolicyReplyInvalidError(
        `${method} ${path}: the answer is not JSON (${this.scrub(res.text).slice(0, 120)})`,
      );
    const parsed = schema.safeParse(json);
    if (!parsed.success)
      throw new PolicyReplyInvalidError(
        `${method} ${path}: the answer is not protocol v2's: ${formatIssues(parsed.error.issues).slice(0, 5).join("; ")}`,
      );
    return parsed.data;
  }
}

/** The worker's refusal as the domain error it stands for. */
function refused(method: string, path: string, status: number, text: string): never {
  const detail = ErrorBody.safeParse(safeJson(text));
  const message = detail.success ? detail.data.error.message.slice(0, 500) : text.slice(0, 200);
  const code = detail.success ? detail.data.error.code : undefined;
  if (code !== undefined && Object.hasOwn(WORKER_ERROR_CODES, code))
    throw new PolicyWorkerRefusedError(
      WORKER_ERROR_CODES[code as keyof typeof WORKER_ERROR_CODES],
      `${method} ${path}: ${message}`,
      status,
    );
  if (status === 409 && code === "STALE_POLICY_VERSION") {
    const stated = StaleVersions.safeParse(safeJson(text)).data?.error;
    throw new StalePolicyVersionError(stated?.held_version, stated?.wanted_version, message);
  }
  if (status === 409) throw new ConflictError(`${method} ${path}: ${message}`);
  if (status === 404) throw new NotFoundError("policy resource", path);
  throw new PolicyEndpointError(`${method} ${path}: HTTP ${status} ${message}`, undefined, status);
}
