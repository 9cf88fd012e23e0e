import type OpenAI from "openai";
import { APIError } from "openai";
import { z } from "zod";
import { UpstreamError, UpstreamRejectedError } from "@harness-s/core/gateway";
import { formatIssues } from "@harness-s/core";
import { reportedUsage } from "@harness-s/core/billing";
import type { UpstreamChat, UpstreamTurn } from "@harness-s/core/gateway";

/**
 * The fields of a chat completion this project reads from an OpenAI-compatible endpoint (the
 * gateway's turns, an endpoint's registration probe): the reply, its token ids and
 * log-probabilities where the server gives them; everything else is handed on as it came.
 */
export const ChatCompletionRead = z.looseObject({
  id: z.string().optional(),
  model: z.string().optional(),
  choices: z
    .array(
      z.looseObject({
        message: z.looseObject({
          content: z.string().nullable().optional(),
          tool_calls: z
            .array(
              z.looseObject({
                type: z.string().optional(),
                function: z.object({ name: z.string(), arguments: z.string() }),
              }),
            )
            .nullable()
            .optional(),
        }),
        logprobs: z
          .looseObject({
            content: z
              .array(z.looseObject({ logprob: z.number() }))
              .nullable()
              .optional(),
          })
          .nullable()
          .optional(),
        token_ids: z.array(z.number().int()).nullable().optional(),
      }),
    )
    .min(1),
  prompt_token_ids: z.array(z.number().int()).nullable().optional(),
  /** Read by `reportedUsage` (bounded, never failing the turn). */
  usage: z.unknown().optional(),
});

/**
 * Statuses with which an endpoint refuses the request as the agent made it (its parameters, its length), not a failure
 * of its own.
 */
const REFUSED_AS_SENT = new Set([400, 413, 422]);

export interface OpenAiUpstreamOptions {
  /** The model name sent upstream; default: the one the agent asked for. */
  model?: string;
  /** Ask for token ids too (vLLM's `return_token_ids`); a policy worker's façade returns them anyway. */
  returnTokenIds?: boolean;
}

/**
 * The gateway's model endpoint: any OpenAI-compatible server (a policy worker's façade, vLLM, a
 * hosted API), asked for one completion with log-probabilities; the answer is checked with zod
 * and its token ids read when present. Failures become UpstreamError (HTTP 502 at the gateway).
 *
 * @example
 * const upstream = new OpenAiUpstream(new OpenAI({ baseURL: "http://127.0.0.1:8000/v1", apiKey: "none" }));
 */
export class OpenAiUpstream implements UpstreamChat {
  constructor(
    private readonly client: OpenAI,
    private readonly options: OpenAiUpstreamOptions = {},
  ) {}

  async complete(req: Parameters<UpstreamChat["complete"]>[0]): Promise<UpstreamTurn> {
    let raw: unknown;
    try {
      raw = await this.client.chat.completions.create({
        ...req.params,
        model: this.options.model ?? String(req.params.model ?? ""),
        messages: req.messages as OpenAI.Chat.ChatCompletionMessageParam[],
        ...(req.tools.length ? { tools: req.tools } : {}),
        logprobs: true,
        stream: false,
        ...(this.options.returnTokenIds ? { return_token_ids: true } : {}),
      } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming);
    } catch (err) {
      const status = err instanceof APIError ? err.status : undefined;
      const detail = err instanceof APIError ? `${status ?? "no status"} ${err.message}` : String(err);
      if (status !== undefined && REFUSED_AS_SENT.has(status))
        throw new UpstreamRejectedError(detail, status, { cause: err });
      throw new UpstreamError(detail, { cause: err, ...(status !== undefined ? { status } : {}) });
    }
    const parsed = ChatCompletionRead.safeParse(raw);
    if (!parsed.success)
      throw new UpstreamError(`the answer is not a chat completion (${formatIssues(parsed.error.issues).join("; ")})`);
    const usage = reportedUsage(parsed.data.usage);
    if (usage?.suspect) console.warn(`gateway upstream: ${usage.suspect}`);
    const c = parsed.data;
    const choice = c.choices[0]!;
    const calls = (choice.message.tool_calls ?? []).filter((t) => (t.type ?? "function") === "function");
    const logprobs = choice.logprobs?.content?.map((t) => t.logprob);
    // The agent gets the completion as it came, with its first tool call only: the harness acts on one call per turn.
    const completion = {
      ...(raw as Record<string, unknown>),
      choices: [
        {
          ...(raw as { choices: object[] }).choices[0],
          message: { ...choice.message, ...(calls.length ? { tool_calls: calls.slice(0, 1) } : {}) },
        },
      ],
    };
    return {
      completion,
      reply: {
        content: choice.message.content ?? null,
        toolCalls: calls.slice(0, 1).map((t) => ({ name: t.function.name, arguments: t.function.arguments })),
      },
      ...(c.id !== undefined ? { id: c.id } : {}),
      ...(c.prompt_token_ids ? { promptIds: c.prompt_token_ids } : {}),
      ...(choice.token_ids ? { completionIds: choice.token_ids } : {}),
      ...(logprobs ? { logprobs } : {}),
      ...(usage ? { usage: { promptTokens: usage.promptTokens, completionTokens: usage.completionTokens } } : {}),
    };
  }
}
