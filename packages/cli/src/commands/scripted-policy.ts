import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/** What a scripted policy calls at an episode's turn: a tool by name, with its arguments. */
export type Script = (episode: string, turn: number) => { tool: string; args?: Record<string, unknown> };

/**
 * How long a policy waits before it answers an episode's turn (0 for its first), given the request's body: milliseconds,
 * or a promise it waits for.
 */
export type TurnDelay = (episode: string, turn: number, body: Record<string, unknown>) => number | Promise<unknown>;

/** Waits out one turn's delay. */
export async function waitTurn(delay: number | Promise<unknown>): Promise<void> {
  if (typeof delay !== "number") await delay;
  else if (delay > 0) await new Promise((r) => setTimeout(r, delay));
}

/**
 * A protocol-v2 policy endpoint with no model: each sample answers the tool call `script` names
 * for the episode's turn (after `delayMs`), with fixed ids and log-probabilities. It measures and
 * tests what a rescue costs around the model (queues, stores, the environment's protocol), and
 * gives episodes that step at their environment every turn.
 *
 * @example
 * const policy = await startScriptedPolicy((_, turn) => ({ tool: turn < 2 ? "search" : "submit" }));
 */
export async function startScriptedPolicy(script: Script, delayMs: TurnDelay = () => 0) {
  const turns = new Map<string, number>();
  let samples = 0;
  // Samples being answered now, and the most at once: a lower bound on the rollouts running at this endpoint.
  let inFlight = 0;
  let peak = 0;
  const server = createServer(async (req, res) => {
    let body = "";
    for await (const c of req) body += c;
    const json = (out: unknown) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(out));
    if (req.method === "GET")
      return json({
        policy_id: "scripted",
        version: 0,
        tokenizer: { name: "scripted", eos_ids: [0] },
        capabilities: { sample: true },
      });
    if (req.method === "DELETE") return json({ closed: turns.delete(decodeURIComponent(req.url!.split("/").at(-1)!)) });
    const parsed = JSON.parse(body) as Record<string, unknown>;
    const episode = String(parsed.episode_id);
    const turn = turns.get(episode) ?? 0;
    turns.set(episode, turn + 1);
    samples++;
    peak = Math.max(peak, ++inFlight);
    await waitTurn(delayMs(episode, turn, parsed));
    inFlight--;
    const { tool, args = {} } = script(episode, turn);
    json({
      policy_version: 0,
      prompt_ids: [1, 2],
      completion: {
        ids: [3, 4],
        logprobs: [-0.5, -0.5],
        text: "",
        content: "",
        finish_reason: "stop",
        tool_calls: [
          { id: `c${samples}`, type: "function", function: { name: tool, arguments: JSON.stringify(args) } },
        ],
      },
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    samples: () => samples,
    /** The most samples answered at once since the last call (then counted afresh from those in flight). */
    takePeak: () => {
      const seen = peak;
      peak = inFlight;
      return seen;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
