import { randomUUID } from "node:crypto";
import { z } from "zod";
import { ServedModel } from "@harness-s/core/models";
import { startPolicyWorker } from "../policy-worker.ts";

/**
 * A served model's worker: the model's name (the worker serves it under that name: its policies' `base_model`) and
 * where the worker listens.
 */
export interface ServedModelWorker {
  name: string;
  url: string;
  token?: string;
}

/** What a worker's `/healthz` says of itself and its base model (harness_s_worker/model_card.py). */
const WorkerCard = z.object({
  base: z.object({
    parameters: z.number().int().positive(),
    context: z.number().int().positive(),
    chat_template: z.string().min(1),
  }),
});

/**
 * Device seconds per generated token the models a worker can build declare, by folder (quotes price a model's GPU
 * seconds at it until one of its runs finishes here): the worker's test model on a 2-core CPU machine, as `node
 * --import tsx scripts/quote-vs-billed.ts` measured it (DBBench and a caller's embedded server on a fresh serve:
 * 12,643 tokens generated in 20.5 s of device time, 1.69 and 1.24 ms each). A folder not here declares none (the
 * default rate, docs/operations.md).
 */
const DECLARED_SECONDS_PER_TOKEN: Readonly<Record<string, number>> = { tiny: 1.6e-3 };

/**
 * Starts one policy worker per model folder (one worker process holds one base model), behind a
 * bearer token of this process's own, and asks each for its model's size, context and chat
 * template family. `stop` ends every worker; each also exits with this process. A worker that
 * refuses its folder stops the ones already started.
 *
 * @example
 * const served = await startServedModelWorkers([{ name: "a", dir: "/models/qwen" }], log);
 * served.models; // [{ name: "a", parameters: …, contextTokens: …, chatTemplate: "chatml", … }]
 */
export async function startServedModelWorkers(
  folders: readonly { name: string; dir: string }[],
  log: (line: string) => void = () => undefined,
) {
  const token = randomUUID();
  const started: { stop: () => Promise<void> }[] = [];
  const stop = async () => {
    await Promise.all(started.map((w) => w.stop()));
  };
  const serve = async ({ name, dir }: { name: string; dir: string }) => {
    const worker = await startPolicyWorker({ model: dir, token, tuning: { servedModelName: name } }, log);
    started.push(worker);
    const res = await fetch(`${worker.url}/healthz`, { signal: AbortSignal.timeout(10_000) });
    const card = WorkerCard.parse(await res.json());
    log(
      `model ${name}: ${dir} at the policy worker on ${worker.url} (${card.base.parameters} parameters, context ${card.base.context}, ${card.base.chat_template} template)`,
    );
    const model = ServedModel.parse({
      name,
      parameters: card.base.parameters,
      contextTokens: card.base.context,
      chatTemplate: card.base.chat_template,
      secondsPerToken: DECLARED_SECONDS_PER_TOKEN[dir],
    });
    return { model, worker: { name, url: worker.url, token } satisfies ServedModelWorker };
  };
  // Every start is awaited, failed or not, so that none is left running when one fails.
  const settled = await Promise.allSettled(folders.map(serve));
  const failed = settled.find((s) => s.status === "rejected");
  if (failed) {
    await stop();
    throw failed.reason;
  }
  const served = settled.map((s) => (s as PromiseFulfilledResult<Awaited<ReturnType<typeof serve>>>).value);
  return { models: served.map((s) => s.model), workers: served.map((s) => s.worker), stop };
}

/**
 * `starting` (a stack) with `workers` stopped after it stops; when it fails to start, `workers` are stopped before the
 * error is thrown.
 */
export async function stoppedTogether<S extends { stop: () => Promise<void> }>(
  starting: Promise<S>,
  workers?: { stop: () => Promise<void> },
): Promise<S> {
  if (!workers) return starting;
  const started = await starting.catch(async (err: unknown) => {
    await workers.stop();
    throw err;
  });
  return {
    ...started,
    stop: async () => {
      await started.stop();
      await workers.stop();
    },
  };
}
