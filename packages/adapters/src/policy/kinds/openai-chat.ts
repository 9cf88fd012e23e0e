import { servedKind } from "./served.ts";

/**
 * The openai-chat endpoint kind: sampled and probed as a served kind (see {@link servedKind}), in its token modes
 * (core's ENDPOINT_KINDS): chat completions with vLLM's `return_token_ids`, the reply naming the model asked for.
 */
export const openaiChat = servedKind("openai-chat", { target: () => ({}) });
