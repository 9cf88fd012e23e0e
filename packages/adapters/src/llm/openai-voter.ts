import { APIConnectionTimeoutError, type OpenAI } from "openai";
import { z } from "zod";
import { InvalidBallotError, VoterTimeoutError } from "@harness-s/core/voting";
import { formatIssues, describeHooks, type HarnessSpec } from "@harness-s/core";
import { reportedUsage } from "@harness-s/core/billing";
import { countsAt, profileOf, smoothedRate } from "@harness-s/core/profile";
import type { Ballot, BallotRequest, VoteContext, Voter } from "@harness-s/core/voting";

/** The parts of a chat completion a voter reads (its usage is read by `reportedUsage`). */
const Answered = z.looseObject({
  choices: z
    .array(z.looseObject({ message: z.looseObject({ content: z.string().nullable().optional() }).optional() }))
    .max(16),
  usage: z.unknown().optional(),
});

/** What the model must answer: a ranking of candidate ids, best first, and its reason. */
export const LlmBallotAnswer = z.object({
  ranking: z.array(z.string().min(1)).min(1).max(100),
  rationale: z.string().max(2000).optional(),
});

export interface OpenAiVoterOptions {
  id: string;
  model: string;
  temperature?: number;
  maxTokens?: number;
  /** USD per prompt token and per completion token (the ballot's `costUsd`). */
  price?: { input: number; output: number };
  /**
   * How the answer's shape is asked for: a JSON schema (structured outputs, the default), JSON
   * mode, or not at all. Answers are parsed tolerantly either way (servers may ignore it).
   */
  responseFormat?: "json_schema" | "json_object" | "none";
}

const SYSTEM = [
  "You route a failed agent task to harness variants (siblings of a base harness H0).",
  "Every rollout of the task failed under H0. Each candidate harness edits H0 along one repair direction.",
  "Rank ALL candidate ids from most to least likely to make the same policy succeed on this task.",
  'Answer with JSON only: {"ranking": ["<id>", ...], "rationale": "<one sentence>"}.',
].join(" ");

/**
 * A candidate as a voter reads it: what it changes (instruction text, notes, hooks, triggers), why, and how it has
 * done.
 */
function describeCandidate(c: HarnessSpec, req: BallotRequest) {
  const p = profileOf(req.profiles, c.id);
  const tagRates = Object.fromEntries(
    req.failureTags.map((t) => {
      const counts = countsAt(p?.byFailureTag, `${req.task.family}/${t}`);
      return [t, counts ? `${counts.successes.toFixed(1)}/${counts.attempts.toFixed(1)}` : "no evidence"];
    }),
  );
  const triggerText = [...c.instruction.cues, ...c.postObservation, ...c.skills.entries]
    .filter((t) => t.text)
    .map((t) => `on ${t.on}: ${t.text}`);
  return {
    id: c.id,
    direction: c.provenance.direction,
    hypothesis: c.provenance.hypothesis || undefined,
    description: c.description || undefined,
    instruction: c.instruction.systemAppend || undefined,
    toolNotes: Object.keys(c.instruction.toolNotes).length ? c.instruction.toolNotes : undefined,
    hooks: describeHooks(c),
    triggers: triggerText.length ? triggerText : undefined,
    profile: {
      policyVersion: p?.policyVersion ?? null,
      familySuccess: smoothedRate(countsAt(p?.byFamily, req.task.family), 0.3, 2).toFixed(2),
      rescuesByFailureTag: tagRates,
    },
  };
}

/** The evidence an LLM voter sees: the task view, the failure, and each candidate in full. */
export function ballotPrompt(req: BallotRequest): string {
  const candidates = req.candidates.map((c) => describeCandidate(c, req));
  return JSON.stringify(
    { task: req.task, failureTags: req.failureTags, failedEvents: req.failedEvents, k: req.k, candidates },
    null,
    1,
  );
}

/**
 * The JSON in an answer: the whole text, a fenced block, or the outermost braces (servers that ignore
 * `response_format`).
 */
export function extractJson(content: string): unknown {
  const candidates = [
    content,
    content.match(/```(?:json)?\s*([\s\S]*?)```/)?.[1],
    content.slice(content.indexOf("{"), content.lastIndexOf("}") + 1),
  ];
  for (const text of candidates) {
    if (!text?.trim()) continue;
    try {
      return JSON.parse(text);
    } catch {
      // try the next reading
    }
  }
  throw new Error(`answer is not JSON: ${content.slice(0, 120)}`);
}

/** Why an answer cannot be a ballot for these candidates, or undefined when it can. */
function answerProblem(
  answer: unknown,
  candidateIds: ReadonlySet<string>,
): { ranking: string[]; rationale?: string } | string {
  const parsed = LlmBallotAnswer.safeParse(answer);
  if (!parsed.success) return parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
  const unknown = parsed.data.ranking.filter((id) => !candidateIds.has(id));
  if (unknown.length) return `unknown harnesses ${unknown.join(", ")}`;
  if (new Set(parsed.data.ranking).size !== parsed.data.ranking.length) return "duplicate ids";
  return parsed.data;
}

/**
 * A voter backed by any OpenAI-compatible chat endpoint (a hosted API, vLLM, SGLang), asking for
 * structured output (a JSON schema derived from the ballot's zod type) and parsing tolerantly. An
 * answer that is not a ballot for these candidates is asked for once more; a second one raises
 * InvalidBallotError, which the router records as this voter's abstention. Tokens of both
 * attempts are counted, and priced when a price is configured.
 *
 * @example
 * const voter = new OpenAiVoter(new OpenAI({ baseURL, apiKey, timeout: 5000, maxRetries: 0 }), { id: "llm-a", model: "gpt-4.1-mini" });
 */
export class OpenAiVoter implements Voter {
  readonly id: string;

  constructor(
    private readonly client: OpenAI,
    private readonly options: OpenAiVoterOptions,
  ) {
    this.id = options.id;
  }

  async vote(req: BallotRequest, ctx: VoteContext = {}): Promise<Ballot> {
    const ids = new Set(req.candidates.map((c) => c.id));
    const usage = { promptTokens: 0, completionTokens: 0 };
    const price = this.options.price;
    const costOf = (u: typeof usage) =>
      price ? { costUsd: u.promptTokens * price.input + u.completionTokens * price.output } : {};
    let problem = "";
    for (let attempt = 0; attempt < 2; attempt++) {
      const completion = Answered.safeParse(await this.ask(attempt, problem, req, ctx.signal));
      const reported = reportedUsage(completion.success ? completion.data.usage : undefined);
      const call = { promptTokens: reported?.promptTokens ?? 0, completionTokens: reported?.completionTokens ?? 0 };
      if (reported?.suspect) console.warn(`voter ${this.id}: ${reported.suspect}`);
      ctx.onSpend?.({ usage: call, ...costOf(call) });
      usage.promptTokens += call.promptTokens;
      usage.completionTokens += call.completionTokens;
      const content = completion.success ? (completion.data.choices[0]?.message?.content ?? "") : "";
      let answer: ReturnType<typeof answerProblem>;
      try {
        answer = completion.success
          ? answerProblem(extractJson(content), ids)
          : `the reply is not a chat completion (${formatIssues(completion.error.issues).join("; ")})`;
      } catch (err) {
        answer = (err as Error).message;
      }
      const cost = costOf(usage);
      if (typeof answer !== "string") {
        return {
          voterId: this.id,
          ranking: answer.ranking,
          ...(answer.rationale !== undefined ? { rationale: answer.rationale } : {}),
          usage,
          ...cost,
          ...(attempt > 0 ? { retries: attempt } : {}),
        };
      }
      problem = answer;
      if (attempt === 1)
        throw new InvalidBallotError(
          this.id,
          `${problem} (after one retry; ${usage.promptTokens + usage.completionTokens} tokens spent)`,
          { spent: { usage, ...cost } },
        );
    }
    throw new Error("unreachable");
  }

  /** One request; the SDK's own timeout is this voter's timeout (an abstention the router records as one). */
  private async ask(
    attempt: number,
    problem: string,
    req: BallotRequest,
    signal: AbortSignal | undefined,
  ): Promise<unknown> {
    try {
      return await this.client.chat.completions.create(
        {
          model: this.options.model,
          temperature: this.options.temperature ?? 0,
          max_tokens: this.options.maxTokens ?? 400,
          ...this.responseFormat(),
          messages: [
            { role: "system", content: SYSTEM },
            { role: "user", content: ballotPrompt(req) },
            ...(attempt > 0
              ? [
                  {
                    role: "user" as const,
                    content: `Your last answer could not be used (${problem}). Answer with the JSON object only.`,
                  },
                ]
              : []),
          ],
        },
        signal ? { signal } : {},
      );
    } catch (err) {
      if (err instanceof APIConnectionTimeoutError) throw new VoterTimeoutError(this.id, this.client.timeout);
      throw err;
    }
  }

  private responseFormat() {
    switch (this.options.responseFormat ?? "json_schema") {
      case "none":
        return {};
      case "json_object":
        return { response_format: { type: "json_object" as const } };
      default:
        return {
          response_format: {
            type: "json_schema" as const,
            json_schema: {
              name: "ballot",
              schema: z.toJSONSchema(LlmBallotAnswer) as Record<string, unknown>,
              strict: false,
            },
          },
        };
    }
  }
}
