import { createRng, hash32, type Rng } from "@harness-s/core";
import { EMBEDDED_AGENT_SYSTEM, renderStep } from "@harness-s/envs";
import type { InstructOptions } from "./recipe.ts";

/**
 * The instruction-following corpus: conversations in generated worlds (tool names, argument
 * names, events and orders drawn at random) where the right next call is whatever the text in
 * context says — a procedure in the system text or the task line, a tool's description that fixes
 * an argument, a harness note after a tool output, a block or a gate naming the fix, a check
 * required before the finishing call. Nothing in a world but its text says what to do, so the only
 * thing to learn is reading and following. It is written in the formats the harnesses use
 * (`[harness] …` notes, `suggested next tool: X`, blocks and gates), and never holds a suite
 * task's text (the corpus leak test checks it).
 */

const VERBS = [
  "fetch",
  "scan",
  "open",
  "check",
  "merge",
  "sort",
  "sync",
  "probe",
  "load",
  "mark",
  "trace",
  "pack",
  "seal",
  "stage",
  "plan",
  "draft",
  "route",
  "clear",
  "pull",
  "push",
];
const NOUNS = [
  "ledger",
  "queue",
  "batch",
  "record",
  "table",
  "shard",
  "token",
  "cache",
  "entry",
  "slot",
  "track",
  "badge",
  "node",
  "ticket",
  "window",
  "crate",
  "vault",
  "grid",
  "lane",
  "index",
];
// The suite's tool names, in random roles: copying a name seen in the text is what transfers.
const SUITE_TOOLS = [
  "login",
  "read_docs",
  "list_items",
  "next_page",
  "get_item",
  "search",
  "refresh",
  "locate",
  "read_file",
  "edit_file",
  "run_tests",
  "write_assertions",
  "revert",
  "show_schema",
  "query",
  "mutate",
  "format_answer",
  "commit",
];
const FINISH = ["submit", "submit", "submit", "finish", "complete_task", "done"];
const DOMAINS = ["ledger", "garden", "orbit", "harbor", "studio", "relay", "forge", "atlas", "canvas", "pixel"];
const TAGS = [
  "urgent",
  "nightly",
  "legacy",
  "shared",
  "strict",
  "remote",
  "batch-mode",
  "audited",
  "fast-path",
  "sandboxed",
];
const EVENTS = [
  "state:ready",
  "state:stale",
  "error:409",
  "error:timeout",
  "error:locked",
  "page:partial",
  "scan:done",
  "probe:empty",
  "sync:lag",
  "check:warn",
  "load:ok",
  "mark:set",
];
const FACTS = ["staged", "synced", "probed", "sealed", "traced", "loaded", "checked", "marked", "packed", "cleared"];
const ARGS = ["mode", "scope", "level", "target", "profile", "channel"];
const VALUES = ["fast", "full", "safe", "deep", "north", "blue", "alpha", "strict", "wide", "lazy"];

export interface InstructTurn {
  append?: { role: "tool"; content: string }[];
  call: { name: string; arguments: Record<string, string> };
  hinted: boolean;
}
export interface InstructConversation {
  source: "instruct";
  kind: string;
  messages: { role: "system" | "user"; content: string }[];
  tools: { type: "function"; function: { name: string; description: string; parameters: Record<string, unknown> } }[];
  turns: InstructTurn[];
}

const pick = <T>(xs: readonly T[], rng: Rng): T => xs[rng.int(xs.length)]!;

function distinct<T>(xs: readonly T[], n: number, rng: Rng): T[] {
  const pool = [...xs];
  const out: T[] = [];
  while (out.length < n && pool.length) out.push(pool.splice(rng.int(pool.length), 1)[0]!);
  return out;
}

const INVENTED = VERBS.flatMap((v) => NOUNS.map((n) => `${v}_${n}`));

function toolNames(rng: Rng, invented: number): string[] {
  const n = 4 + rng.int(5);
  const made = Array.from({ length: n }, () => rng.next() < invented).filter(Boolean).length;
  return [...distinct(SUITE_TOOLS, n - made, rng), ...distinct(INVENTED, made, rng)];
}

const PROCEDURES: ((steps: string[], finish: string) => string)[] = [
  (s, f) => `Procedure: call ${s.join(", then ")}; then ${f}.`,
  (s, f) => `Steps: ${[...s, f].map((x, i) => `${i + 1}. ${x}`).join(" ")}`,
  (s, f) =>
    `First ${s[0]}${s
      .slice(1)
      .map((x) => `, next ${x}`)
      .join("")}, and finally call ${f}.`,
  (s, f) => `Work in this order: ${s.join(" -> ")} -> ${f}.`,
];
const REDIRECTS: ((tool: string, event: string, last: string) => string)[] = [
  (t) => `[harness] suggested next tool: ${t}`,
  (t, e) => `[harness] After ${e}, try ${t}.`,
  (t, e) => `[harness] When you see ${e}, ${t} is usually needed.`,
  (t, e, l) => `[harness] After ${l} (${e}), ${t}.`,
];
const IDLE_NOTES = ["[harness] You are repeating yourself.", "[harness] Keep going.", "[harness] Three turns left."];

/** The tool list the model is offered: the world's tools, one maybe taking an argument, and the finishing tool. */
function toolSchemas(
  names: string[],
  finish: string,
  argTool: string | undefined,
  arg: { name: string; value: string },
  rng: Rng,
): InstructConversation["tools"] {
  return [...names, finish].map((name) => ({
    type: "function" as const,
    function: {
      name,
      description:
        name === finish
          ? "submit your work and end the task"
          : name === argTool
            ? `run the ${name} tool; always call it with ${arg.name} "${arg.value}"`
            : `run the ${name} tool`,
      parameters:
        name === argTool
          ? {
              type: "object",
              properties: { [arg.name]: { type: "string", enum: distinct(VALUES, 3, rng).concat(arg.value) } },
              required: [arg.name],
            }
          : { type: "object", properties: {} },
    },
  }));
}

/**
 * The task as the model first reads it: the steps to call, where the procedure is written (the system
 * prompt or the task), an optional verifying tool, and the system and user messages.
 */
function opening(
  names: string[],
  finish: string,
  rng: Rng,
): { steps: string[]; inSystem: boolean; verifyWith: string | undefined; messages: InstructConversation["messages"] } {
  const steps = distinct(names, 1 + rng.int(Math.min(3, names.length)), rng);
  const procedure = pick(PROCEDURES, rng)(steps, finish);
  const inSystem = rng.next() < 0.5;
  const tags = distinct(TAGS, rng.int(3), rng);
  const taskLine = `${pick(DOMAINS, rng)} task (${tags.join(", ") || "no tags"})`;
  const verifyWith = rng.next() < 0.25 ? pick(names, rng) : undefined;
  const user = [
    taskLine,
    inSystem ? "" : procedure,
    verifyWith ? `Before calling ${finish}, always call ${verifyWith}.` : "",
    renderStep({ event: "start", facts: [] }),
  ]
    .filter(Boolean)
    .join("\n\n");
  const system = EMBEDDED_AGENT_SYSTEM.replace("Call submit", `Call ${finish}`);
  const messages = [
    { role: "system" as const, content: inSystem ? `${system}\n${procedure}` : system },
    { role: "user" as const, content: user },
  ];
  return { steps, inSystem, verifyWith, messages };
}

/** One world and one episode in it; the calls are what its text asks for, turn by turn. */
function conversation(rng: Rng, invented: number): InstructConversation {
  const names = toolNames(rng, invented);
  const finish = pick(FINISH, rng);
  const argTool = rng.next() < 0.4 ? pick(names, rng) : undefined;
  const arg = { name: pick(ARGS, rng), value: pick(VALUES, rng) };
  const argsFor = (t: string): Record<string, string> => (t === argTool ? { [arg.name]: arg.value } : {});
  const tools = toolSchemas(names, finish, argTool, arg, rng);
  const { steps, inSystem, verifyWith, messages } = opening(names, finish, rng);
  const facts: string[] = [];
  const turns: InstructTurn[] = [];
  const plan = [...steps, ...(verifyWith ? [verifyWith] : []), finish];
  let kind = inSystem ? "procedure-in-system" : "procedure-in-task";
  let gated = false;
  const say = (content: string, call: string, hinted: boolean) =>
    turns.push({
      ...(turns.length ? { append: [{ role: "tool" as const, content }] } : {}),
      call: { name: call, arguments: argsFor(call) },
      hinted,
    });
  say("", plan[0]!, false);
  let at = 0;
  while (turns.length < 9) {
    const last = turns.at(-1)!.call.name;
    const event = pick(EVENTS, rng);
    if (last !== finish && rng.next() < 0.15) facts.push(pick(FACTS, rng));
    const out = renderStep({ event, facts: [...new Set(facts)] });
    const roll = rng.next();
    const detour = pick(
      names.filter((n) => n !== plan[at + 1]),
      rng,
    );
    if (last === finish && !gated && rng.next() < 0.4) {
      gated = true;
      kind += "+gate";
      say(
        `The answer was not accepted (${pick(FACTS, rng)}); fix it and ${finish} again.\n[harness] suggested next tool: ${detour}`,
        detour,
        true,
      );
      at = plan.length - 2;
      continue;
    }
    if (last === finish) break;
    if (roll < 0.2 && last === plan[at]) {
      // The harness intercepted the step just called: the fix it names, then the step again.
      kind += "+block";
      const fix = pick(
        names.filter((n) => n !== last),
        rng,
      );
      say(
        `The harness blocked ${last}: do ${pick(FACTS, rng)} first.\n[harness] suggested next tool: ${fix}`,
        fix,
        true,
      );
      at -= 1;
      continue;
    }
    if (roll < 0.45) {
      kind += "+note";
      say(`${out}\n${pick(REDIRECTS, rng)(detour, event, last)}`, detour, true);
      continue;
    }
    at += 1;
    say(roll < 0.55 ? `${out}\n${pick(IDLE_NOTES, rng)}` : out, plan[at] ?? finish, false);
  }
  return { source: "instruct", kind, messages, tools, turns };
}

/**
 * `opts.conversations` generated conversations, the same for the same seed.
 *
 * @example
 * const corpus = instructionCorpus({ conversations: 3000, invented: 0.5, seed: 0 });
 */
export function instructionCorpus(opts: InstructOptions): InstructConversation[] {
  return Array.from({ length: opts.conversations }, (_, i) =>
    conversation(createRng(hash32("instruct", opts.seed * 1_000_003 + i)), opts.invented),
  );
}
