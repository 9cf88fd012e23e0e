import { parentPort } from "node:worker_threads";
import { embeddedSetup, type EmbeddedSettings } from "./setup.ts";

/** One request to the instance thread: build (or reuse) the instance of `seed` under `settings`. */
export interface InstanceRequest {
  id: number;
  settings: EmbeddedSettings;
  seed: number;
}

const setups = new Map<string, ReturnType<typeof embeddedSetup>>();

parentPort?.on("message", async (req: InstanceRequest) => {
  try {
    const key = JSON.stringify(req.settings);
    if (!setups.has(key)) setups.set(key, embeddedSetup(req.settings));
    const instance = await setups.get(key)!.instance(req.seed);
    parentPort!.postMessage({ id: req.id, instance });
  } catch (err) {
    parentPort!.postMessage({ id: req.id, error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  }
});
