import { servedKind } from "./served.ts";

/**
 * The vllm endpoint kind: sampled and probed as a served kind (see {@link servedKind}), in its token modes (core's
 * ENDPOINT_KINDS).
 */
export const vllm = servedKind("vllm");
