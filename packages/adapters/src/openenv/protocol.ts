import { z } from "zod";

/**
 * The OpenEnv environment protocol (meta-pytorch/OpenEnv's env server), as this project speaks
 * it both ways: an episode is a WebSocket session at `/ws` (each connection its own environment;
 * the HTTP `/reset` and `/step` routes are stateless, one environment per request), messages
 * `{type: "reset" | "step" | "state" | "close" | "mcp", data}`, answers `{type: "observation",
 * data: {observation, reward, done}}`, `{type: "state", data}` or `{type: "error", data: {message,
 * code}}`. Tools are MCP-style actions: `{type: "list_tools"}` and `{type: "call_tool",
 * tool_name, arguments}`. An observation's own fields travel under `observation`.
 */
export const OpenEnvStepResult = z.object({
  observation: z.record(z.string(), z.unknown()).default({}),
  reward: z.number().finite().nullable().optional(),
  done: z.boolean().default(false),
});
export type OpenEnvStepResult = z.infer<typeof OpenEnvStepResult>;

export const OpenEnvServerMessage = z.discriminatedUnion("type", [
  z.object({ type: z.literal("observation"), data: OpenEnvStepResult }),
  z.object({ type: z.literal("state"), data: z.record(z.string(), z.unknown()) }),
  z.object({
    type: z.literal("error"),
    data: z.object({ message: z.string().max(10_000), code: z.string().max(100).optional() }),
  }),
  z.object({ type: z.literal("mcp"), data: z.record(z.string(), z.unknown()) }),
]);
export type OpenEnvServerMessage = z.infer<typeof OpenEnvServerMessage>;

export const CallToolAction = z.object({
  type: z.literal("call_tool"),
  tool_name: z.string().min(1).max(200),
  arguments: z.record(z.string(), z.unknown()).default({}),
});
export const ListToolsAction = z.object({ type: z.literal("list_tools") });
export const OpenEnvAction = z.discriminatedUnion("type", [CallToolAction, ListToolsAction]);
export type OpenEnvAction = z.infer<typeof OpenEnvAction>;

/**
 * What `reset` takes: every argument optional, as an OpenEnv client calls `reset()` (TRL's
 * `environment_factory` with a seed, or nothing). `task_id` names the task; without it the
 * server draws one of its training tasks from the seed. Further keys are the environment's own
 * reset arguments, passed through.
 */
export const OpenEnvResetData = z.looseObject({
  task_id: z
    .string()
    .min(1)
    .max(200)
    .nullish()
    .describe("the task to run; default: one of the server's training tasks, drawn from the seed"),
  seed: z
    .number()
    .int()
    .nullish()
    .describe("seeds the episode (and, without task_id, picks its task); default: drawn by the server"),
  episode_id: z
    .string()
    .min(1)
    .max(512)
    .nullish()
    .describe("the episode's id, echoed in state; default: made by the server"),
});
export type OpenEnvResetData = z.infer<typeof OpenEnvResetData>;

/**
 * The codes of the errors an OpenEnv server of this project answers (`{type: "error", data: {message, code}}`, or an
 * HTTP route's `detail`).
 */
export const OPENENV_ERROR_CODES = [
  "INVALID_JSON",
  "INVALID_MESSAGE",
  "UNKNOWN_TASK",
  "NO_EPISODE",
  "TOOL_NOT_FOUND",
  "EXECUTION_ERROR",
  "NOT_FOUND",
  "BAD_REQUEST",
  "HEADERS_TOO_LARGE",
  "PAYLOAD_TOO_LARGE",
  "REQUEST_TIMEOUT",
  "SESSIONS_FULL",
  "ADDRESS_SESSIONS_FULL",
  "INTERNAL",
] as const;
export type OpenEnvErrorCode = (typeof OPENENV_ERROR_CODES)[number];

export const OpenEnvClientMessage = z.discriminatedUnion("type", [
  z.object({ type: z.literal("reset"), data: OpenEnvResetData.default({}) }),
  z.object({ type: z.literal("step"), data: OpenEnvAction }),
  z.object({ type: z.literal("state") }).loose(),
  z.object({ type: z.literal("close") }).loose(),
]);
export type OpenEnvClientMessage = z.infer<typeof OpenEnvClientMessage>;

/** A tool as `list_tools` describes it (MCP's shape). */
export const OpenEnvTool = z.object({
  name: z.string().min(1).max(200),
  description: z.string().max(8_000).default(""),
  input_schema: z.record(z.string(), z.unknown()).default({}),
});
export type OpenEnvTool = z.infer<typeof OpenEnvTool>;

/**
 * What this project's own environment servers put in an observation, beside the text an agent
 * reads: the event and facts the harness's hooks match, and at the end the outcome. A server that
 * sends none of them is read by an `EventObserver` instead.
 */
export const HarnessObservation = z.looseObject({
  text: z
    .string()
    .max(1 << 20)
    .optional(),
  event: z.string().max(200).optional(),
  facts: z.array(z.string().max(200)).max(1_000).optional(),
  tools: z.array(OpenEnvTool).max(128).optional(),
  success: z.boolean().optional(),
  failure_tags: z.array(z.string().max(100)).max(50).optional(),
  behaviours: z.record(z.string(), z.boolean()).optional(),
  result: z.unknown().optional(),
});
export type HarnessObservation = z.infer<typeof HarnessObservation>;
