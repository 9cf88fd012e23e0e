import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { WebSocketServer, type WebSocket } from "ws";
import { createRng, hash32, type EnvSession, type Environment, type EnvStep, type Task, type TaskSource } from "@harness-s/core";
import { OpenEnvClientMessage, type OpenEnvServerMessage, type OpenEnvTool } from "./protocol.ts";

export interface OpenEnvServerOptions {
  env: Environment;
  tasks: TaskSource;
  /** How the environment's tools are described to an agent (its action names as MCP tools). */
  describeTools: (actions: readonly string[]) => OpenEnvTool[];
  /** The action that ends an episode and grades it. */
  submit: string;
  /** WebSocket sessions at once (each holds an episode). */
  maxSessions?: number;
  /** Largest message read, in bytes. */
  maxMessageBytes?: number;
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};

const stepObservation = (step: EnvStep) => ({ text: step.text ?? "", event: step.event, facts: step.facts });

/** One WebSocket session: at most one episode at a time, ended by submit, a new reset, close or a dropped socket. */
class Session {
  private episode?: { task: Task; session: EnvSession; steps: number; id: string; finished: boolean };

  constructor(private readonly opts: OpenEnvServerOptions) {}

  async handle(raw: string): Promise<OpenEnvServerMessage | "close"> {
    let parsed: OpenEnvClientMessage;
    try {
      const got = OpenEnvClientMessage.safeParse(JSON.parse(raw));
      if (!got.success)
        return { type: "error", data: { message: `not a message of this protocol: ${got.error.issues.map((i) => i.message).join("; ")}`, code: "INVALID_MESSAGE" } };
      parsed = got.data;
    } catch {
      return { type: "error", data: { message: "not JSON", code: "INVALID_JSON" } };
    }
    try {
      switch (parsed.type) {
        case "reset":
          return await this.reset(parsed.data);
        case "step":
          return await this.step(parsed.data);
        case "state":
          return { type: "state", data: { episode_id: this.episode?.id ?? null, task_id: this.episode?.task.id ?? null, step_count: this.episode?.steps ?? 0 } };
        case "close":
          return "close";
      }
    } catch (err) {
      return { type: "error", data: { message: err instanceof Error ? err.message : String(err), code: "EXECUTION_ERROR" } };
    }
  }

  private async reset(data: Record<string, unknown>): Promise<OpenEnvServerMessage> {
    await this.end();
    const taskId = typeof data.task_id === "string" ? data.task_id : undefined;
    const task = taskId ? await this.opts.tasks.get(taskId) : undefined;
    if (!task) return { type: "error", data: { message: `reset needs a task_id this server knows (got ${JSON.stringify(taskId ?? null)})`, code: "UNKNOWN_TASK" } };
    const id = typeof data.episode_id === "string" ? data.episode_id : `${task.id}-${Date.now().toString(36)}`;
    const seed = typeof data.seed === "number" && Number.isInteger(data.seed) ? data.seed : hash32(id);
    const session = await this.opts.env.start(task, createRng(seed));
    this.episode = { task, session, steps: 0, id, finished: false };
    const tools = this.opts.describeTools(this.opts.env.tools(task));
    return {
      type: "observation",
      data: {
        observation: { ...stepObservation(session.initial), tools, task: { id: task.id, family: task.family, tags: task.tags, instruction: task.instruction } },
        reward: null,
        done: false,
      },
    };
  }

  private async step(action: Extract<OpenEnvClientMessage, { type: "step" }>["data"]): Promise<OpenEnvServerMessage> {
    const ep = this.episode;
    if (!ep || ep.finished) return { type: "error", data: { message: "no episode: send reset first", code: "NO_EPISODE" } };
    if (action.type === "list_tools")
      return { type: "observation", data: { observation: { tools: this.opts.describeTools(this.opts.env.tools(ep.task)) }, reward: null, done: false } };
    if (!this.opts.env.tools(ep.task).includes(action.tool_name)) return { type: "error", data: { message: `no tool ${action.tool_name}`, code: "TOOL_NOT_FOUND" } };
    ep.steps++;
    if (action.tool_name === this.opts.submit) {
      ep.finished = true;
      const outcome = await ep.session.finish("submitted", action.arguments);
      await ep.session.close?.();
      this.episode = undefined;
      const observation = { text: "submitted", success: outcome.success, failure_tags: outcome.failureTags, behaviours: outcome.behaviours };
      return { type: "observation", data: { observation, reward: outcome.reward, done: true } };
    }
    const step = await ep.session.act(action.tool_name, action.arguments);
    return { type: "observation", data: { observation: stepObservation(step), reward: null, done: step.done } };
  }

  /** Ends the episode in progress, ungraded (a new reset, close, or a dropped connection). */
  async end(): Promise<void> {
    const ep = this.episode;
    this.episode = undefined;
    if (!ep || ep.finished) return;
    await ep.session.finish("budget-exhausted").catch(() => undefined);
    await ep.session.close?.().catch(() => undefined);
  }
}

/**
 * An {@link Environment} served over the OpenEnv protocol (see `protocol.ts`): a WebSocket
 * session per episode at `/ws`, `GET /health`, `/schema`, `/metadata`, `/state`, and the
 * stateless `POST /reset` (the task's first observation) and `POST /step` (refused: a step needs
 * a session). A reset names its task by `task_id`; the events and facts the harness reads travel
 * in each observation beside its text, and the submit step carries the outcome and the reward.
 *
 * @example
 * const server = await startOpenEnvServer({ env, tasks, describeTools, submit: "submit" }, 8000);
 */
export async function startOpenEnvServer(opts: OpenEnvServerOptions, port = 0, host = "127.0.0.1") {
  const maxSessions = opts.maxSessions ?? 256;
  const sockets = new WebSocketServer({ noServer: true, maxPayload: opts.maxMessageBytes ?? 1 << 20 });
  const http = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (req.method === "GET" && path === "/health") return json(res, 200, { status: "healthy" });
    if (req.method === "GET" && path === "/metadata") return json(res, 200, { name: "harness-s", description: "a Harness-S environment over the OpenEnv protocol" });
    if (req.method === "GET" && path === "/state") return json(res, 200, { episode_id: null, step_count: 0 });
    if (req.method === "GET" && path === "/schema")
      return json(res, 200, {
        action: {
          oneOf: [
            { type: "object", properties: { type: { const: "call_tool" }, tool_name: { type: "string" }, arguments: { type: "object" } } },
            { type: "object", properties: { type: { const: "list_tools" } } },
          ],
        },
        observation: { type: "object", properties: { text: { type: "string" }, event: { type: "string" }, facts: { type: "array" }, tools: { type: "array" } } },
        state: { type: "object", properties: { episode_id: { type: ["string", "null"] }, step_count: { type: "integer" } } },
      });
    if (req.method === "POST" && path === "/step") return json(res, 400, { detail: "a step needs an episode: open a WebSocket session at /ws" });
    if (req.method === "POST" && path === "/reset") {
      let body = "";
      for await (const chunk of req) {
        body += chunk;
        if (body.length > 1 << 20) return json(res, 413, { detail: "body too large" });
      }
      const session = new Session(opts);
      const answer = await session
        .handle(JSON.stringify({ type: "reset", data: body ? JSON.parse(body) : {} }))
        .catch((err) => ({ type: "error" as const, data: { message: String(err) } }));
      await session.end();
      return answer !== "close" && answer.type === "observation" ? json(res, 200, answer.data) : json(res, 400, { detail: answer === "close" ? "closed" : answer.data });
    }
    json(res, 404, { detail: "not found" });
  });
  http.on("upgrade", (req, socket, head) => {
    if (new URL(req.url ?? "/", "http://x").pathname !== "/ws" || sockets.clients.size >= maxSessions) {
      socket.end("HTTP/1.1 503 Service Unavailable\r\n\r\n");
      return;
    }
    sockets.handleUpgrade(req, socket, head, (ws: WebSocket) => {
      const session = new Session(opts);
      // One message at a time, in order: a step waits for the one before it.
      let queue = Promise.resolve();
      ws.on("message", (data) => {
        queue = queue.then(async () => {
          const answer = await session.handle(data.toString());
          if (answer === "close") return ws.close();
          ws.send(JSON.stringify(answer));
        });
      });
      ws.on("close", () => void queue.then(() => session.end()));
    });
  });
  await new Promise<void>((resolve) => http.listen(port, host, () => resolve()));
  const address = http.address() as { port: number };
  return {
    url: `http://${host}:${address.port}`,
    close: async () => {
      for (const ws of sockets.clients) ws.terminate();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}
