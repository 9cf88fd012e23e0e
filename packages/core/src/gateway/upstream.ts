import { createHash } from "node:crypto";
import { NotConfiguredError } from "../errors.ts";
import { UpstreamError, UpstreamRejectedError } from "./errors.ts";
import type { ActionChoice, Policy, UpdateResult } from "../ports.ts";
import type { PolicyObservation } from "../rollout/types.ts";
import { choiceFromReply, offeredTools, renderChat, type ChatMsg, type ToolBinding } from "./chat-format.ts";
import type { RelayChannel } from "./relay.ts";
import type { UpstreamChat, UpstreamTurn } from "./upstream-turn.ts";

/** One model turn of a gateway episode, with what the harness inserted into the messages it saw. */
export interface RecordedTurn {
  turn: UpstreamTurn;
  action: string;
  /**
   * The harness's notes on the observation the model answered (tool-message warnings, trigger texts, budget warnings).
   */
  harnessNotes: string[];
  /** A hash of what the model was asked (messages and tools): a replay of the episode must ask the same. */
  prompt: string;
}

/** The hash of one completion request's messages and tools. */
export function promptHash(req: Pick<Parameters<UpstreamChat["complete"]>[0], "messages" | "tools">): string {
  return createHash("sha256")
    .update(JSON.stringify([req.messages, req.tools]))
    .digest("hex")
    .slice(0, 32);
}

/**
 * The policy of a gateway episode: the model behind the gateway, asked with the harnessed
 * conversation (the agent's preamble, the instruction with the harness's system text, tool
 * descriptions with its notes, tool outputs with its notes) and the agent's own sampling
 * parameters. An upstream failure is handed to the waiting request and the turn is asked again
 * when the agent sends its request again: nothing of the episode is lost.
 */
export class UpstreamPolicy implements Policy {
  readonly turns: RecordedTurn[] = [];
  /** Completions asked of the endpoint and the tokens it reported, not yet metered (see `takeSpent`). */
  private unmetered = { turns: 0, tokens: 0 };
  private pending: UpstreamTurn | undefined;

  constructor(
    private readonly upstream: UpstreamChat,
    private readonly channel: RelayChannel,
    private readonly opts: {
      preamble: readonly ChatMsg[];
      tools: readonly ToolBinding[];
      params: () => Readonly<Record<string, unknown>>;
      parseArguments?: (raw: string) => Record<string, unknown>;
    },
  ) {}

  version(): number {
    return 0;
  }

  update(): Promise<UpdateResult> {
    return Promise.reject(
      new NotConfiguredError("the gateway's policy only samples; train on the episodes it records"),
    );
  }

  /**
   * What the endpoint answered since the last call: every completion counts, also one the harness
   * kept from the agent (a refused commit is asked again).
   */
  takeSpent(): { turns: number; tokens: number } {
    const spent = this.unmetered;
    this.unmetered = { turns: 0, tokens: 0 };
    return spent;
  }

  /** The reply of the action being applied, once (undefined when the harness forced the action). */
  takeReply(): UpstreamTurn | undefined {
    const turn = this.pending;
    this.pending = undefined;
    return turn;
  }

  async act(obs: PolicyObservation): Promise<ActionChoice> {
    const messages = renderChat(obs, this.opts.preamble, this.opts.tools);
    const tools = offeredTools(this.opts.tools, obs.toolNotes);
    let turn: UpstreamTurn;
    for (;;) {
      try {
        turn = await this.upstream.complete({ messages, tools, params: this.opts.params() });
        this.unmetered.turns++;
        this.unmetered.tokens += turn.usage ? turn.usage.promptTokens + turn.usage.completionTokens : 0;
        break;
      } catch (err) {
        const known = err instanceof UpstreamError || err instanceof UpstreamRejectedError;
        this.channel.toAgent.put({
          kind: "upstream-error",
          error: known ? err : new UpstreamError(String(err), { cause: err }),
        });
        const again = await this.channel.fromAgent.take();
        if (again.kind === "closed") throw err;
      }
    }
    const logProb = (turn.logprobs ?? []).reduce((s, x) => s + x, 0);
    const choice = choiceFromReply(turn.reply, this.opts.tools, logProb, this.opts.parseArguments);
    this.turns.push({
      turn,
      action: choice.action,
      harnessNotes: [...(obs.notes ?? [])],
      prompt: promptHash({ messages, tools }),
    });
    this.pending = turn;
    return choice;
  }
}
