import { z } from "zod";
import { familyNames } from "../families.ts";

/**
 * How the gateway reads tool outputs when it knows no family's tools: an output that starts with "error" is a failed
 * call.
 */
export const GENERIC_GATEWAY_ENV = "generic";

/**
 * The environments whose tool outputs the gateway can read: generic, and every family that declares a gateway reading.
 */
export const gatewayEnvs = (): string[] => [GENERIC_GATEWAY_ENV, ...familyNames("gateway")];

/** A gateway environment's name, checked against the registry when parsed. */
export const GatewayEnv = z.string().superRefine((name, ctx) => {
  if (!gatewayEnvs().includes(name))
    ctx.addIssue({
      code: "custom",
      message: `unknown gateway environment ${JSON.stringify(name)} (one of ${gatewayEnvs().join(", ")})`,
    });
});

/**
 * The gateway's configuration as a deployment gives it (the API Lambda's `GatewayConfig` secret, JSON) or `serve`'s
 * flags.
 */
export const GatewayConfig = z.strictObject({
  /** The model endpoint's base URL (any OpenAI-compatible server; a policy worker's `/v1`). */
  upstream: z.url({ protocol: /^https?$/ }),
  /** Its API key (default: the HARNESS_S_GATEWAY_UPSTREAM_KEY variable, else none). */
  apiKey: z.string().min(1).optional(),
  /** The model name sent upstream (default: the agent's). */
  model: z.string().min(1).optional(),
  /** The pool to route between. */
  pool: z.string().min(1),
  /**
   * How tool outputs are read: `generic`, or a family's reading (`dbbench`: SQL results, AgentBench's tools;
   * `appworld`: execute's output; `swe-gym`: run, read, edit, write).
   */
  env: GatewayEnv.default(GENERIC_GATEWAY_ENV),
  /** Ask the endpoint for token ids (vLLM's `return_token_ids`). */
  returnTokenIds: z.boolean().optional(),
  /** How long one completion may take, headers and body (default {@link UPSTREAM_TIMEOUT_MS}). */
  timeoutMs: z.number().int().min(100).max(900_000).optional(),
});
export type GatewayConfig = z.input<typeof GatewayConfig>;
