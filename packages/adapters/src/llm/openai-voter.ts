import type OpenAI from "openai";
import { z } from "zod";
import { InvalidBallotError, countsAt, describeHooks, profileOf, smoothedRate, type BallotRequest, type Voter } from "@harness-s/core";

/** What the model must answer: a ranking of candidate ids, best first. */
export const LlmBallotAnswer = z.object({
  ranking: z.array(z.string().min(1)).min(1).max(100),
  rationale: z.string().max(2000).optional(),
});

export interface OpenAiVoterOptions {
  id: string;
  model: string;
  temperature?: number;
  maxTokens?: number;
}

const SYSTEM = [
  "You route a failed agent task to harness variants (siblings of a base harness H0).",
  "Every rollout of the task failed under H0. Each candidate harness edits H0 along one repair direction.",
  "Rank ALL candidate ids from most to least likely to make the same policy succeed on this task.",
  'Answer with JSON only: {"ranking": ["<id>", ...], "rationale": "<one sentence>"}.',
].join(" ");

/** The evidence an LLM voter sees: the task view, the failure, each candidate's hooks and profile. */
export function ballotPrompt(req: BallotRequest): string {
  const candidates = req.candidates.map((c) => {
    const p = profileOf(req.profiles, c.id);
    const tagRates = Object.fromEntries(
      req.failureTags.map((t) => {
        const counts = countsAt(p?.byFailureTag, `${req.task.family}/${t}`);
        return [t, counts ? `${counts.successes.toFixed(1)}/${counts.attempts.toFixed(1)}` : "no evidence"];
      }),
    );
    return {
      id: c.id,
      direction: c.provenance.direction,
      hooks: describeHooks(c),
      familySuccess: smoothedRate(countsAt(p?.byFamily, req.task.family), 0.3, 2).toFixed(2),
      rescuesByFailureTag: tagRates,
    };
  });
  return JSON.stringify({ task: req.task, failureTags: req.failureTags, failedEvents: req.failedEvents, k: req.k, candidates }, null, 1);
}

/**
 * A voter backed by any OpenAI-compatible chat endpoint (a hosted API, vLLM, SGLang). The answer
 * is parsed with zod; malformed JSON or unknown ids raise InvalidBallotError, which the router
 * counts as this voter failing. No retries here: the router's quorum and timeout decide.
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

  async vote(req: BallotRequest) {
    const completion = await this.client.chat.completions.create({
      model: this.options.model,
      temperature: this.options.temperature ?? 0,
      max_tokens: this.options.maxTokens ?? 400,
      response_format: { type: "json_object" },
      messages: [
        { role: "system", content: SYSTEM },
        { role: "user", content: ballotPrompt(req) },
      ],
    });
    const content = completion.choices[0]?.message?.content ?? "";
    let json: unknown;
    try {
      json = JSON.parse(content);
    } catch {
      throw new InvalidBallotError(this.id, `answer is not JSON: ${content.slice(0, 120)}`);
    }
    const parsed = LlmBallotAnswer.safeParse(json);
    if (!parsed.success) throw new InvalidBallotError(this.id, parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "));
    return {
      voterId: this.id,
      ranking: parsed.data.ranking,
      rationale: parsed.data.rationale,
      usage: completion.usage ? { promptTokens: completion.usage.prompt_tokens, completionTokens: completion.usage.completion_tokens } : undefined,
    };
  }
}
