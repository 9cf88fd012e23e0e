import type OpenAI from "openai";
import { z } from "zod";
import {
  DIRECTION_PARTS,
  HarnessPatch,
  checkProposal,
  type LeakIndex,
  type ProposalInput,
  type Proposer,
  type RefusalReason,
} from "@harness-s/core/evolution";
import { describeHooks, type HarnessSpec } from "@harness-s/core";
import { extractJson } from "./openai-voter.ts";

/**
 * What an LLM proposer did: calls made of its budget, edits accepted, each refusal by reason (with the last few reasons
 * in words).
 */
export interface ProposerReport {
  model: string;
  maxCalls: number;
  calls: number;
  accepted: number;
  refused: Partial<Record<RefusalReason, number>>;
  /** Requests that failed (connection, HTTP error): not counted as refusals. */
  failedRequests: number;
  lastRefusals: { reason: RefusalReason; detail: string }[];
}

const SYSTEM = [
  "You improve an agent's harness: the instructions, notes and checks around a language-model agent that solves tasks with tools.",
  "You get the parent harness, one repair direction, and the parent's failures on development tasks, quoted turn by turn.",
  "Propose ONE edit along that direction only, aimed at a failure pattern that recurs across tasks, never at one task:",
  "never quote a task's id, its answer, its data values or its SQL. Name at least two of the quoted tasks as evidence.",
  'Answer with one JSON object: {"hypothesis": "…", "evidence": ["task id", "task id"], "patch": {…}}.',
].join("\n");

export interface OpenAiProposerOptions {
  model: string;
  /** LLM calls allowed in all; once spent, `propose` returns nothing and `exhausted()` is true. */
  maxCalls: number;
  /** What no hint may quote (the dev tasks' ids, answers, gold SQL, table values). */
  leaks: LeakIndex;
  /** The environment's tools and what they do, shown to the model. */
  tools: readonly { name: string; description: string }[];
  /** Events the environment reports, as triggers match them (e.g. `sql:error:*`). */
  events: readonly string[];
  temperature?: number;
  maxTokens?: number;
}

/**
 * Directional evolution's proposer on any OpenAI-compatible endpoint: for each edit it shows the
 * parent spec, the direction and the parts of a spec that direction may change, the parent's
 * failures quoted from dev rollouts, and asks for a patch as structured output (JSON schema of
 * {@link HarnessPatch}, parsed tolerantly). Every answer goes through `checkProposal` (schema,
 * direction, two tasks of evidence, leak scan, the merged spec); refusals are counted by reason.
 *
 * @example
 * const proposer = new OpenAiProposer(new OpenAI({ baseURL, apiKey }), { model: "qwen2.5-72b", maxCalls: 40, leaks, tools, events });
 */
export class OpenAiProposer implements Proposer {
  readonly id: string;
  readonly report: ProposerReport;
  private made = 0;

  constructor(
    private readonly client: OpenAI,
    private readonly options: OpenAiProposerOptions,
  ) {
    this.id = `llm:${options.model}`;
    this.report = {
      model: options.model,
      maxCalls: options.maxCalls,
      calls: 0,
      accepted: 0,
      refused: {},
      failedRequests: 0,
      lastRefusals: [],
    };
  }

  exhausted(): boolean {
    return this.report.calls >= this.options.maxCalls;
  }

  async propose(input: ProposalInput): Promise<HarnessSpec[]> {
    const out: HarnessSpec[] = [];
    const evidenceIds = (input.evidence ?? []).map((e) => e.taskId);
    for (let i = 0; i < input.count && !this.exhausted(); i++) {
      this.report.calls++;
      let content: string;
      try {
        const completion = await this.client.chat.completions.create({
          model: this.options.model,
          temperature: this.options.temperature ?? 0.7,
          max_tokens: this.options.maxTokens ?? 1_200,
          response_format: {
            type: "json_schema",
            json_schema: {
              name: "harness_patch",
              schema: z.toJSONSchema(HarnessPatch, { io: "input" }) as Record<string, unknown>,
              strict: false,
            },
          },
          messages: [
            { role: "system", content: SYSTEM },
            { role: "user", content: this.prompt(input) },
          ],
        });
        content = completion.choices[0]?.message?.content ?? "";
      } catch {
        this.report.failedRequests++;
        continue;
      }
      let answer: unknown;
      try {
        answer = extractJson(content);
      } catch (err) {
        answer = err as Error;
      }
      const id =
        `${input.parent.id.replace(/^(llm-)+/, "")}-llm-${input.direction}-${input.round}-${++this.made}`.slice(0, 120);
      const checked = checkProposal(answer, {
        parent: input.parent,
        direction: input.direction,
        evidenceIds,
        leaks: this.options.leaks,
        id,
        proposer: this.id,
      });
      if (checked.ok) {
        this.report.accepted++;
        out.push(checked.spec);
      } else {
        this.report.refused[checked.reason] = (this.report.refused[checked.reason] ?? 0) + 1;
        this.report.lastRefusals = [
          ...this.report.lastRefusals,
          { reason: checked.reason, detail: checked.detail },
        ].slice(-10);
      }
    }
    return out;
  }

  /** The evidence the model sees for one edit. */
  private prompt(input: ProposalInput): string {
    const p = input.parent;
    return JSON.stringify(
      {
        direction: input.direction,
        mayChange: DIRECTION_PARTS[input.direction],
        parent: {
          id: p.id,
          instruction: p.instruction,
          hooks: describeHooks(p),
          preAction: p.preAction,
          postObservation: p.postObservation,
          commitGate: p.commitGate,
          budget: p.budget,
        },
        tools: this.options.tools,
        events: this.options.events,
        failureSignals: input.signals
          .slice(0, 12)
          .map((s) => ({ event: s.event, producedBy: s.producedBy, count: s.count })),
        failures: input.evidence ?? [],
      },
      null,
      1,
    );
  }
}
