import { servedKind } from "./served.ts";

/**
 * The sglang endpoint kind: sampled and probed as a served kind (see {@link servedKind}), in its token modes (core's
 * ENDPOINT_KINDS).
 */
export const sglang = servedKind("sglang");
