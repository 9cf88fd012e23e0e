import { parseHarnessSpec, type HarnessSpec, type Trigger } from "../harness/spec.ts";
import type { Rng } from "../util/rng.ts";
import type { FailureSignal, ProposalInput, Proposer } from "./proposer.ts";

const PROGRESS = /^(page:|tests:|assert:|edited|mutated|result:|file:|search:|schema:)/;

/** The tool roles each direction is about, as a proposer reading tool docs would reason. */
const DIRECTION_ROLES: Record<ProposalInput["direction"], string[]> = {
  contract: ["navigate", "finalize"],
  recon: ["inspect"],
  "pre-action": ["inspect"],
  recovery: ["inspect"],
  "loop-breaking": ["finalize", "navigate"],
  verification: ["verify", "finalize"],
  budget: [],
  decomposition: ["navigate", "verify", "act"],
};

function pick<T>(items: readonly T[], rng: Rng): T {
  return items[rng.int(items.length)]!;
}

/** Signals weighted by how often they accompanied a failure. */
function pickSignal(
  signals: readonly FailureSignal[],
  rng: Rng,
  filter: (s: FailureSignal) => boolean,
): FailureSignal | undefined {
  const pool = signals.filter(filter);
  const total = pool.reduce((s, x) => s + x.count, 0);
  let u = rng.next() * total;
  for (const s of pool) {
    u -= s.count;
    if (u <= 0) return s;
  }
  return pool[pool.length - 1];
}

function trigger(on: string, hint: string, text: string): Trigger {
  return { on, hint, text, priority: 0, maxFires: 3 };
}

/** A check after an action (half the time) or a commit gate on a fact; false when none applies. */
function verificationEdit(
  next: HarnessSpec,
  signals: readonly FailureSignal[],
  rng: Rng,
  hintFor: (s: FailureSignal) => string,
): boolean {
  if (rng.next() < 0.5) {
    const s = pickSignal(signals, rng, (x) => x.roles[x.producedBy] === "act");
    const tools = s ? s.tools.filter((t) => s.roles[t] === "verify") : [];
    if (!s || !tools.length) return false;
    const hint = pick(tools, rng);
    next.postObservation.push(
      trigger(s.event, hint, `Check the effect of ${s.producedBy} with ${hint} before submitting.`),
    );
    return true;
  }
  const s = pickSignal(signals, rng, () => true);
  if (!s || s.facts.length === 0) return false;
  const fact = pick(s.facts, rng);
  const requires = [...new Set([...(next.commitGate?.requires ?? []), fact])];
  next.commitGate = { requires, hint: hintFor(s), maxBlocks: 2 };
  return true;
}

/** One random edit of `spec` along the input's direction, or undefined when none applies. */
function mutate(spec: HarnessSpec, input: ProposalInput, rng: Rng): HarnessSpec | undefined {
  const next = structuredClone(spec);
  const { signals } = input;
  const preferred = DIRECTION_ROLES[input.direction];
  const hintFor = (s: FailureSignal) => {
    const tools = s.tools.filter((t) => t !== "submit");
    const fitting = tools.filter((t) => preferred.includes(s.roles[t] ?? ""));
    return pick(fitting.length && rng.next() < 0.75 ? fitting : tools, rng);
  };
  switch (input.direction) {
    case "recovery": {
      const s = pickSignal(signals, rng, (x) => x.event.startsWith("error:"));
      if (!s) return undefined;
      const hint = hintFor(s);
      next.postObservation.push(trigger(s.event, hint, `After ${s.event}, try ${hint}.`));
      break;
    }
    case "contract": {
      const s = pickSignal(signals, rng, (x) => PROGRESS.test(x.event));
      if (!s) return undefined;
      const hint = hintFor(s);
      next.postObservation.push(trigger(s.event, hint, `When you see ${s.event}, ${hint} is usually needed.`));
      break;
    }
    case "decomposition": {
      // Close the loop on what the agent just did: check an action's effect, act on a failed check.
      const s = pickSignal(signals, rng, (x) => ["act", "verify"].includes(x.roles[x.producedBy] ?? ""));
      if (!s) return undefined;
      const wanted = s.roles[s.producedBy] === "act" ? "verify" : "act";
      const tools = s.tools.filter((t) => s.roles[t] === wanted);
      if (!tools.length) return undefined;
      const hint = pick(tools, rng);
      next.postObservation.push(trigger(s.event, hint, `After ${s.producedBy} (${s.event}), ${hint}.`));
      break;
    }
    case "recon": {
      const s = pickSignal(signals, rng, () => true);
      if (!s) return undefined;
      const first = hintFor(s);
      if (next.recon.first.includes(first)) return undefined;
      next.recon.first.push(first);
      break;
    }
    case "loop-breaking": {
      const s = pickSignal(signals, rng, () => true);
      if (!s) return undefined;
      next.postObservation.push(
        trigger(`repeat:${2 + rng.int(2)}`, rng.next() < 0.5 ? "submit" : hintFor(s), "You are repeating yourself."),
      );
      break;
    }
    case "verification":
      if (!verificationEdit(next, signals, rng, hintFor)) return undefined;
      break;
    case "pre-action": {
      const s = pickSignal(signals, rng, () => true);
      if (!s || s.facts.length === 0) return undefined;
      next.preAction.push({
        action: pick(s.tools, rng),
        requires: [pick(s.facts, rng)],
        mode: "block",
        hint: hintFor(s),
        maxBlocks: 2,
      });
      break;
    }
    case "budget": {
      const maxTurns = Math.max(4, spec.budget.maxTurns + pick([-3, -2, 2, 4], rng));
      next.budget = { maxTurns, warnAt: 2, forceSubmitAt: 1 };
      break;
    }
  }
  const keys = next.postObservation.map((t) => `${t.on}->${t.hint}`);
  if (new Set(keys).size !== keys.length) return undefined;
  return next;
}

/**
 * The embedded proposer: random single edits along one direction, aimed at events that
 * accompanied the parent's dev failures, preferring tools whose documented role fits the
 * direction (three times in four). Most proposals are still useless; evaluation decides.
 *
 * @example
 * const specs = await mutationProposer.propose({ parent: h0, direction: "recovery", signals, count: 6, rng, round: 0 });
 */
export const mutationProposer: Proposer = {
  id: "embedded-mutation",
  async propose(input: ProposalInput): Promise<HarnessSpec[]> {
    const out: HarnessSpec[] = [];
    for (let i = 0; i < input.count * 4 && out.length < input.count; i++) {
      const rng = input.rng.fork(`${input.round}:${i}`);
      const edited = mutate(input.parent, input, rng);
      if (!edited) continue;
      const id = `${input.direction}-r${input.round}-c${out.length}`;
      out.push(
        parseHarnessSpec({
          ...edited,
          id,
          description: `${input.direction} edit of ${input.parent.id}`,
          provenance: {
            direction: input.direction,
            parent: input.parent.id,
            hypothesis: `repairs H0 failures through ${input.direction}`,
            motivatingTasks: [],
            proposer: this.id,
          },
        }),
      );
    }
    return out;
  },
};
