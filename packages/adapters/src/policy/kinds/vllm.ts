import { ModelListReply } from "@harness-s/core/protocol";
import { servedKind, type ServedWire } from "./served.ts";
import { VLLM_BASE } from "../served-base.ts";
import type { ServedClient } from "../served-client.ts";

/**
 * The base model's served names as vLLM lists them: the cards without a `parent`, in order (an adapter's card names its
 * base as `parent`; vllm@00153c8b7948077ebdfc5bfa14e403da41aaea6d vllm/entrypoints/openai/models/serving.py
 * `show_available_models`). A server that lists none, or answers otherwise, leaves the names unrecorded.
 */
async function baseNames(client: ServedClient): Promise<string[] | undefined> {
  try {
    const names = (await client.get("/v1/models", ModelListReply)).data.filter((c) => !c.parent).map((c) => c.id);
    return names.length ? names.slice(0, 64) : undefined;
  } catch (err) {
    if ((err as { code?: string }).code === "URL_NOT_ALLOWED") throw err;
    return undefined;
  }
}

/**
 * vLLM on the wire: chat completions' ids with `return_token_ids`; a base model answers by its **first** served name
 * whichever of its names was asked (`model_name()` → `base_model_paths[0].name`, same file), an adapter by its own.
 */
export const VLLM_WIRE: ServedWire = {
  target: (model, _base, names) => ({ answersAs: names?.includes(model) ? names[0]! : model }),
  servedNames: baseNames,
  base: VLLM_BASE,
};

/**
 * The vllm endpoint kind: sampled and probed as a served kind (see {@link servedKind}), in its token modes (core's
 * ENDPOINT_KINDS).
 */
export const vllm = servedKind("vllm", VLLM_WIRE);
