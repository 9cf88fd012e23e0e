import { inject } from "vitest";

/** The shared worker, once it answers `/healthz` (it starts with the run: the venv may be made first). */
export async function sharedPolicyWorker(timeoutMs = 300_000): Promise<{ url: string; token: string }> {
  const worker = inject("policyWorker");
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await fetch(`${worker.url}/healthz`, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return worker;
    if (Date.now() > deadline)
      throw new Error(`the shared policy worker did not answer on ${worker.url} in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
