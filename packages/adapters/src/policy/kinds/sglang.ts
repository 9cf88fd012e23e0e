import { ValidationError } from "@harness-s/core";
import { SglangModelInfoReply } from "@harness-s/core/protocol";
import { servedKind, type ServedWire } from "./served.ts";
import { SGLANG_BASE } from "../served-base.ts";
import { adapterField, wholeVersion } from "../served-modes.ts";

/**
 * SGLang on the wire (sgl-project/sglang@004c82e07d876f6e4a0ad6e15325706b0f478f1a
 * python/sglang/srt/entrypoints/openai/protocol.py): chat completions put the prompt's and the completion's ids **in
 * each choice** with `return_prompt_token_ids` and `return_token_ids`, and the choice's `meta_info` (its
 * `weight_version`) with `return_meta_info`; a LoRA adapter is named per request by `lora_path` (the same field as
 * `/generate`'s), and the reply's `model` is the request's. Its weight version is the server's `--weight-version`
 * string (`/get_model_info`), a whole number where the trainer names its versions so.
 */
export const SGLANG_WIRE: ServedWire = {
  target: (model, base) => ({
    chatExtras: {
      return_token_ids: true,
      return_prompt_token_ids: true,
      return_meta_info: true,
      ...adapterField(model, base),
    },
  }),
  base: SGLANG_BASE,
  async currentVersion(client, record) {
    const stated = (await client.get("/get_model_info", SglangModelInfoReply)).weight_version;
    const version = wholeVersion(stated);
    if (version !== undefined) return version;
    throw new ValidationError("rescue", [
      `weightVersion: the sglang server at ${record.id} states weight version ${JSON.stringify(stated ?? null)}, not a whole number; name the version, with its servedModel`,
    ]);
  },
};

/**
 * The sglang endpoint kind: sampled and probed as a served kind (see {@link servedKind}), in its token modes (core's
 * ENDPOINT_KINDS).
 */
export const sglang = servedKind("sglang", SGLANG_WIRE);
