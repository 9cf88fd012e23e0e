import type { z } from "zod";
import { formatIssues } from "@harness-s/core";
import {
  EndpointRouteMissingError,
  PolicyEndpointError,
  PolicyReplyInvalidError,
  ServedModelMismatchError,
} from "../errors.ts";
import { safeJson, sendJson, type JsonTransportOptions } from "./json-transport.ts";
import { scrubError, secretScrubber } from "./scrub-secrets.ts";

/**
 * The message an inference server's error body carries (vLLM: `{error: {message}}` or `{message}`; FastAPI:
 * `{detail}`).
 */
function errorMessage(text: string): string {
  const body = safeJson(text) as
    | { error?: { message?: unknown } | string; message?: unknown; detail?: unknown }
    | undefined;
  const message = typeof body?.error === "object" ? body.error.message : (body?.error ?? body?.message ?? body?.detail);
  return typeof message === "string" ? message : text;
}

/** FastAPI's answer for a path it has no route for (starlette's default 404 handler): `{"detail": "Not Found"}`. */
const routeMissing = (text: string) => (safeJson(text) as { detail?: unknown } | undefined)?.detail === "Not Found";

/**
 * A client of a vLLM, SGLang or OpenAI-compatible server as rescues sample it: JSON requests
 * through the caller's guarded fetch, each repeated after a dropped connection or a passing 5xx
 * (every request here is stateless: a repeat samples afresh, and only the answered sample is
 * kept), replies validated by the schemas of `@harness-s/core/protocol`'s served wire. A 404 to a
 * request that names a model is that model not served (`SERVED_MODEL_MISMATCH`), unless it is the
 * framework's own "Not Found" for a route the server lacks (`ENDPOINT_ROUTE_MISSING`); any text the
 * server sent back reaches an error's message only with the caller's secrets masked.
 *
 * @example
 * const client = new ServedClient("http://vllm.example:8000", { clock: systemClock, fetch: guarded });
 * const { tokens } = await client.post("/tokenize", { model, messages }, TokenizeReply, model);
 */
export class ServedClient {
  /**
   * What this client has sampled so far: turns, the prompt ids each added to its episode and the completion ids, and
   * the time spent waiting on the server, answered or not.
   */
  readonly sampled = { turns: 0, promptTokens: 0, completionTokens: 0, ms: 0 };
  private readonly scrub: (text: string) => string;

  constructor(
    readonly baseUrl: string,
    private readonly opts: JsonTransportOptions,
  ) {
    this.scrub = secretScrubber([opts.token, ...Object.values(opts.headers ?? {})]);
  }

  /** One request; `model` is the model it names (a 404 is then that model not served). */
  async post<S extends z.ZodType>(path: string, body: unknown, schema: S, model?: string): Promise<z.infer<S>> {
    const started = this.opts.clock.now();
    try {
      return await this.exchange(path, body, schema, model);
    } catch (err) {
      throw scrubError(err, this.scrub);
    } finally {
      this.sampled.ms += this.opts.clock.now() - started;
    }
  }

  /** A read (`GET /v1/models`, SGLang's `/get_model_info`), answered as {@link post} answers. */
  async get<S extends z.ZodType>(path: string, schema: S): Promise<z.infer<S>> {
    try {
      return await this.exchange(path, undefined, schema, undefined, "GET");
    } catch (err) {
      throw scrubError(err, this.scrub);
    }
  }

  private async exchange<S extends z.ZodType>(
    path: string,
    body: unknown,
    schema: S,
    model: string | undefined,
    method = "POST",
  ): Promise<z.infer<S>> {
    const res = await sendJson(this.opts, this.baseUrl, path, method, body, {}, true);
    if (!res.ok) {
      const message = this.scrub(errorMessage(res.text)).slice(0, 300);
      if (res.status === 404 && routeMissing(res.text))
        throw new EndpointRouteMissingError(
          `${method} ${path}: the endpoint has no such route (HTTP 404 Not Found); a server older than this token mode (an older vLLM has no /inference/v1/generate)`,
        );
      if (res.status === 404 && model !== undefined)
        throw new ServedModelMismatchError(
          `POST ${path}: the endpoint does not serve model ${JSON.stringify(model)} (HTTP 404: ${message}); it no longer holds that version, or the name is not the one it serves`,
        );
      throw new PolicyEndpointError(`${method} ${path}: HTTP ${res.status} ${message}`, undefined, res.status);
    }
    const json = safeJson(res.text);
    if (json === undefined)
      throw new PolicyReplyInvalidError(
        `${method} ${path}: the answer is not JSON (${this.scrub(res.text).slice(0, 120)})`,
      );
    const parsed = schema.safeParse(json);
    if (!parsed.success)
      throw new PolicyReplyInvalidError(
        `${method} ${path}: the answer is not the server's wire format: ${formatIssues(parsed.error.issues).slice(0, 5).join("; ")}`,
      );
    return parsed.data;
  }
}
