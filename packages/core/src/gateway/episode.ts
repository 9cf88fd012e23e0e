import { ConflictError } from "../errors.ts";
import { EpisodeClosedError } from "./errors.ts";
import type { HarnessSpec } from "../harness/spec.ts";
import { rolloutsIn } from "../rollout/episode-runner.ts";
import type { Task } from "../task.ts";
import { forcedSubmitReply, type ChatMsg, type ToolBinding } from "./chat-format.ts";
import { matchConversation, messageFingerprint, replyFingerprint, type ConversationMatch } from "./conversation.ts";
import {
  Mailbox,
  RelayEnvironment,
  type AgentInput,
  type EventObserver,
  type RelayChannel,
  type RelayOut,
} from "./relay.ts";
import type { GatewayTrajectory } from "./trajectory.ts";
import type { UpstreamChat } from "./upstream-turn.ts";
import { UpstreamPolicy, type RecordedTurn } from "./upstream.ts";

export interface GatewayEpisodeInit {
  id: string;
  keyId: string;
  /** The fingerprint of the conversation's opening messages (`openingFingerprint`). */
  opening: string;
  task: Task;
  harness: HarnessSpec;
  decisionId: string;
  /** The agent's messages before its first user message (its system message, examples). */
  preamble: readonly ChatMsg[];
  tools: readonly ToolBinding[];
  /** The agent's commit tool (a forced submit is handed out as a call of it). */
  submitTool: string;
  upstream: UpstreamChat;
  observer: EventObserver;
  seed: number;
  parseArguments?: (raw: string) => Record<string, unknown>;
}

/**
 * One agent's episode under the harness the router chose, run by `runEpisode` as it runs any
 * episode (the same hooks: instruction, notes, checks, commit gate, budget), with the model
 * behind the gateway as its policy and the agent as its environment. Each HTTP request moves it
 * one reply further (`advance`) when it extends the recorded conversation exactly; a request
 * repeated after its answer was lost gets that answer again; anything else is refused.
 */
export class GatewayEpisode {
  readonly id: string;
  status: GatewayTrajectory["status"] = "running";
  /** The fingerprints of the agent's messages the episode has read, in order. */
  private readonly recorded: string[] = [];
  private busy = false;
  private params: Readonly<Record<string, unknown>> = {};
  private last?: RelayOut;
  private readonly submitTool: string;
  private endReason: "budget-exhausted" | "submitted" = "submitted";
  private readonly channel: RelayChannel = { toAgent: new Mailbox<RelayOut>(), fromAgent: new Mailbox<AgentInput>() };
  private readonly policy: UpstreamPolicy;

  constructor(init: GatewayEpisodeInit) {
    this.id = init.id;
    this.submitTool = init.submitTool;
    this.policy = new UpstreamPolicy(init.upstream, this.channel, {
      preamble: init.preamble,
      tools: init.tools,
      params: () => this.params,
      ...(init.parseArguments ? { parseArguments: init.parseArguments } : {}),
    });
    const env = new RelayEnvironment(
      this.id,
      [...new Set(init.tools.map((t) => t.action))],
      this.channel,
      init.observer,
      () => this.policy.takeReply(),
    );
    rolloutsIn(env, this.policy)(init.task, init.harness, init.seed).then(
      () => {
        if (this.status === "running") this.status = "ended";
      },
      (err) => {
        if (this.status === "running") this.status = err instanceof EpisodeClosedError ? "closed" : "failed";
        this.channel.toAgent.put({ kind: "ended", reason: "budget-exhausted" });
      },
    );
  }

  /** How many of the agent's messages the episode has read. */
  get seen(): number {
    return this.recorded.length;
  }

  /** How `messages` stands to the conversation recorded so far (see `matchConversation`). */
  match(messages: readonly ChatMsg[]): ConversationMatch {
    return matchConversation(this.recorded, this.expectedEcho(), messages);
  }

  /**
   * The next thing to tell the agent, after handing it `messages` (the agent's whole conversation;
   * the episode reads what it has not seen). One request at a time per episode; a request that
   * neither repeats nor extends the recorded conversation is a ConflictError.
   */
  async advance(messages: readonly ChatMsg[], params: Readonly<Record<string, unknown>>): Promise<RelayOut> {
    if (this.status === "closed" || this.status === "failed")
      throw new EpisodeClosedError(this.id, this.status === "failed" ? "it failed" : "it was closed");
    if (this.busy) throw new ConflictError(`a request of gateway episode ${this.id} is still being answered`);
    const first = this.recorded.length === 0;
    const match = first ? "extends" : this.match(messages);
    if (this.status === "ended")
      return match === "repeat" && this.last ? this.last : { kind: "ended", reason: this.endReason };
    if (match === "mismatch")
      throw new ConflictError(
        `this request does not continue gateway episode ${this.id}: a continuing request holds every message of the conversation so far unchanged, then the reply the gateway gave, then the agent's new messages; start a new conversation (or name another episode) instead`,
      );
    if (match === "repeat" && this.last && this.last.kind !== "upstream-error") return this.last;
    this.busy = true;
    try {
      this.params = params;
      if (!first) this.channel.fromAgent.put({ kind: "turn", messages: messages.slice(this.recorded.length) });
      for (let i = this.recorded.length; i < messages.length; i++) this.recorded.push(messageFingerprint(messages[i]!));
      const out = await this.channel.toAgent.take();
      if (out.kind === "ended") this.endReason = out.reason;
      this.last = out;
      return out;
    } finally {
      this.busy = false;
    }
  }

  /** The assistant message the agent echoes for the last reply it got (none after an upstream error or the end). */
  private expectedEcho(): string | undefined {
    if (this.last?.kind === "reply") return replyFingerprint(this.last.turn.reply);
    if (this.last?.kind === "forced-submit") return replyFingerprint(forcedSubmitReply(this.submitTool));
    return undefined;
  }

  /**
   * The completions and tokens the endpoint spent on this episode since the last call (metered by the request that
   * takes them).
   */
  takeSpent(): { turns: number; tokens: number } {
    return this.policy.takeSpent();
  }

  /**
   * Ends a running episode in this process (evicted from the live cache, or the gateway stops); the store keeps what it
   * recorded.
   */
  close(): void {
    if (this.status !== "running") return;
    this.status = "closed";
    this.channel.fromAgent.put({ kind: "closed" });
  }

  /** The model turns asked for so far (a request's are those past the count before it). */
  get turns(): readonly RecordedTurn[] {
    return this.policy.turns;
  }
}
