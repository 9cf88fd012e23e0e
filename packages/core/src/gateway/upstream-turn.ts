import { z } from "zod";
import { MAX_TOKENS_PER_CALL } from "../billing/metering.ts";
import type { ChatMsg, offeredTools } from "./chat-format.ts";

/**
 * One completion of the model behind the gateway: the JSON to return to the agent as it came,
 * the reply read from it, and, when the server returns them (the policy worker's façade; vLLM
 * with `return_token_ids`), the turn's prompt ids, completion ids and their log-probabilities.
 */
export const UpstreamTurn = z.object({
  completion: z.looseObject({}),
  reply: z.object({
    content: z.string().nullable(),
    toolCalls: z.array(z.object({ name: z.string(), arguments: z.string() })),
  }),
  /**
   * The completion's id (a policy worker keeps it for one episode: its prompt ids are then the turn's new ids only).
   */
  id: z.string().optional(),
  promptIds: z.array(z.number().int()).optional(),
  completionIds: z.array(z.number().int()).optional(),
  logprobs: z.array(z.number()).optional(),
  usage: z
    .object({
      promptTokens: z.number().int().min(0).max(MAX_TOKENS_PER_CALL),
      completionTokens: z.number().int().min(0).max(MAX_TOKENS_PER_CALL),
    })
    .optional(),
});
export type UpstreamTurn = z.infer<typeof UpstreamTurn>;

/** The port to the model endpoint: one chat completion (never streamed: the harness reads the whole reply first). */
export interface UpstreamChat {
  complete(req: {
    messages: ChatMsg[];
    tools: ReturnType<typeof offeredTools>;
    params: Readonly<Record<string, unknown>>;
  }): Promise<UpstreamTurn>;
}
