import type { Clock } from "@harness-s/core";
import { EnvironmentServersBusyError } from "../errors.ts";
import { AppWorldClient } from "./client.ts";

/**
 * AppWorld servers, one live task each: `lend` hands out a free one with the task initialised,
 * and its `release` closes the task and takes the server back; `withServer` does both around
 * `fn`, whether it returns or throws (a policy or an episode that crashes releases it too). A
 * caller waits for a free server up to `waitMs`.
 *
 * @example
 * const pool = new AppWorldServerPool(["http://127.0.0.1:8001", "http://127.0.0.1:8002"], systemClock);
 * const out = await pool.withServer("task-1", "exp", async (server) => server.execute("task-1", "print(1)"));
 */
export class AppWorldServerPool {
  private readonly free: AppWorldClient[];
  private readonly waiting: ((server: AppWorldClient) => void)[] = [];

  constructor(
    urls: readonly string[],
    private readonly clock: Clock,
    private readonly opts: { waitMs?: number; client?: (url: string) => AppWorldClient } = {},
  ) {
    if (urls.length === 0) throw new Error("an AppWorld server pool needs at least one server URL");
    this.free = urls.map((u) => (opts.client ?? ((url: string) => new AppWorldClient(url)))(u));
    this.size = urls.length;
  }

  readonly size: number;

  /** Servers lent out now. */
  get busy(): number {
    return this.size - this.free.length;
  }

  /**
   * A free server with `taskId` initialised on it, and how to give it back (closing the task); call `release` once,
   * also on failure.
   */
  async lend(
    taskId: string,
    experimentName: string,
  ): Promise<{ server: AppWorldClient; instruction: string; release: () => Promise<void> }> {
    const server = await this.acquire();
    const release = async () => {
      await server.close(taskId).catch(() => undefined); // a dead server's task died with it
      this.release(server);
    };
    try {
      const { instruction } = await server.initialize(taskId, experimentName);
      return { server, instruction, release };
    } catch (err) {
      await release();
      throw err;
    }
  }

  async withServer<T>(
    taskId: string,
    experimentName: string,
    fn: (server: AppWorldClient, instruction: string) => Promise<T>,
  ): Promise<T> {
    const { server, instruction, release } = await this.lend(taskId, experimentName);
    try {
      return await fn(server, instruction);
    } finally {
      await release();
    }
  }

  private async acquire(): Promise<AppWorldClient> {
    const now = this.free.pop();
    if (now) return now;
    const waitMs = this.opts.waitMs ?? 300_000;
    // A waiter remembers the server it was handed, so a release racing the deadline is never lost.
    let given: AppWorldClient | undefined;
    let wake: () => void = () => undefined;
    const handed = new Promise<void>((resolve) => (wake = resolve));
    const waiter = (server: AppWorldClient) => {
      given = server;
      wake();
    };
    this.waiting.push(waiter);
    const handedOver = new AbortController();
    await Promise.race([handed.then(() => handedOver.abort()), this.clock.sleep(waitMs, handedOver.signal)]);
    if (given) return given;
    this.waiting.splice(this.waiting.indexOf(waiter), 1);
    throw new EnvironmentServersBusyError(this.size, waitMs);
  }

  private release(server: AppWorldClient): void {
    const next = this.waiting.shift();
    if (next) next(server);
    else this.free.push(server);
  }
}
