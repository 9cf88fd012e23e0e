import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createRng, type Environment, type Rng, type TaskSource } from "@harness-s/core";
import { answerClientError, answerHttp } from "./http-routes.ts";
import type { OpenEnvTool } from "./protocol.ts";
import { OPENENV_SERVER_DEFAULTS, type OpenEnvServerLimits } from "./server-limits.ts";
import { OpenEnvSession } from "./session.ts";
import { openEnvSockets } from "./ws-sessions.ts";

export { IDLE_CLOSE, OPENENV_SERVER_DEFAULTS, type OpenEnvServerLimits } from "./server-limits.ts";
export { OPENENV_HTTP_STATUS } from "./http-routes.ts";
export { taskIdOfSeed } from "./session.ts";

export interface OpenEnvServerOptions extends Partial<OpenEnvServerLimits> {
  env: Environment;
  tasks: TaskSource;
  /** How the environment's tools are described to an agent (its action names as MCP tools). */
  describeTools: (actions: readonly string[]) => OpenEnvTool[];
  /** The action that ends an episode and grades it. */
  submit: string;
  /**
   * The tasks a reset without `task_id` draws from, by its seed (the server's training tasks); without them such a
   * reset is refused.
   */
  resetTasks?: readonly string[];
  /** Draws the seed of a reset that names neither a seed nor an episode id (default: seeded from the start time). */
  rng?: Rng;
  /** Where an internal error is written (a client's bad input is answered, not logged). */
  log?: (line: string) => void;
}

/**
 * An {@link Environment} served over the OpenEnv protocol (see `protocol.ts`): a WebSocket
 * session per episode at `/ws`, `GET /health`, `/schema`, `/metadata`, `/state`, and the
 * stateless `POST /reset` (the task's first observation) and `POST /step` (refused: a step needs
 * a session). A reset names its task by `task_id`, or draws one of `resetTasks` from its seed;
 * the events and facts the harness reads travel in each observation beside its text, and the
 * submit step carries the outcome and the reward. Bounded as `OPENENV_SERVER_DEFAULTS` says
 * (each bound an option); nothing a client sends, over HTTP or WebSocket, throws out of it.
 *
 * @example
 * const server = await startOpenEnvServer({ env, tasks, describeTools, submit: "submit", resetTasks: ["t-1", "t-2"] }, 8000);
 */
export async function startOpenEnvServer(opts: OpenEnvServerOptions, port = 0, host = "127.0.0.1") {
  const limits: OpenEnvServerLimits = { ...OPENENV_SERVER_DEFAULTS };
  for (const key of Object.keys(OPENENV_SERVER_DEFAULTS) as (keyof OpenEnvServerLimits)[])
    limits[key] = opts[key] ?? limits[key];
  const log = opts.log ?? ((line: string) => console.error(line));
  const rng = opts.rng ?? createRng(Date.now());
  const newSession = () => new OpenEnvSession({ ...opts, drawSeed: () => rng.int(2 ** 31) });
  const sockets = openEnvSockets(limits, newSession, log);
  const httpResets = { running: 0 };
  const http = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.headersTimeoutMs + limits.bodyTimeoutMs,
      connectionsCheckingInterval: 1_000,
    },
    (req: IncomingMessage, res: ServerResponse) => void answerHttp(req, res, { limits, newSession, log, httpResets }),
  );
  http.on("clientError", answerClientError);
  http.on("upgrade", (req, socket, head) => sockets.upgrade(req, socket, head));
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(port, host, () => {
      http.removeListener("error", reject);
      resolve();
    });
  });
  http.on("error", (err) => log(`openenv server: ${err.message}`));
  const address = http.address() as { port: number };
  return {
    url: `http://${host}:${address.port}`,
    close: async () => {
      sockets.terminateAll();
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}
