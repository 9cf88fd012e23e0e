import { z } from "zod";
import {
  createRng,
  hash32,
  rolloutsIn,
  type HarnessSpec,
  type Policy,
  type PolicyObservation,
  type Rng,
  type Task,
} from "@harness-s/core";
import type { ChatMessage, ToolSchema } from "@harness-s/core/protocol";
import { firstMessages, nextMessage } from "@harness-s/adapters/policy";
import { EMBEDDED_AGENT_SYSTEM, TextEnvironment, embeddedToolSchemas } from "@harness-s/envs";
import type { ExperimentDeps } from "@harness-s/core/experiment";
import type { WarmStartOptions } from "./recipe.ts";

export { WarmStartOptions } from "./recipe.ts";

/** One episode of the embedded initial policy, as the text a token policy would have been sent. */
export const WarmConversation = z.object({
  task: z.object({ id: z.string(), split: z.string(), family: z.string(), requirements: z.array(z.string()) }),
  suiteSeed: z.number().int(),
  harnessId: z.string(),
  success: z.boolean(),
  messages: z.array(z.record(z.string(), z.unknown())),
  tools: z.array(z.record(z.string(), z.unknown())),
  /** Each turn: the messages appended before it (none on the first) and the tool call it made. */
  turns: z.array(
    z.object({
      append: z.array(z.record(z.string(), z.unknown())).optional(),
      call: z.object({ name: z.string(), arguments: z.record(z.string(), z.unknown()) }),
      /** The embedded policy's log-probability of this call (the imitation's floor: its entropy). */
      logprob: z.number(),
      /** Whether the turn showed a hint (a harness's or the task's own cue). */
      hinted: z.boolean(),
    }),
  ),
});
export type WarmConversation = z.infer<typeof WarmConversation>;

interface Recording {
  messages: ChatMessage[];
  tools: ToolSchema[];
  turns: WarmConversation["turns"];
}

/**
 * Wraps a policy so that each episode it acts in is kept as a conversation, rendered as
 * `TokenSampler` renders it (the same first messages and appended tool results).
 */
function recording(inner: Policy): { policy: Policy; take: (rng: Rng) => Recording | undefined } {
  const open = new WeakMap<Rng, Recording>();
  const policy: Policy = {
    version: () => inner.version(),
    update: (batch) => inner.update(batch),
    act: async (obs: PolicyObservation, rng: Rng) => {
      const choice = await inner.act(obs, rng);
      const known = open.get(rng);
      const turn = {
        call: { name: choice.action, arguments: choice.args ?? {} },
        logprob: choice.logProb,
        hinted: obs.hints.length > 0,
      };
      if (known) known.turns.push({ append: [nextMessage(obs, true)], ...turn });
      else
        open.set(rng, {
          messages: firstMessages(EMBEDDED_AGENT_SYSTEM, obs),
          tools: embeddedToolSchemas(obs.tools),
          turns: [turn],
        });
      return choice;
    },
  };
  return { policy, take: (rng) => open.get(rng) };
}

/** Each setup's warm starts rendered in this process, by their options: builds that share a setup render them once. */
const rendered = new WeakMap<object, Map<string, Promise<WarmConversation[]>>>();

/**
 * The warm start's data (see {@link renderWarmStart}), rendered once per setup and options in this process: the data
 * is deterministic in them, and several builds over one setup (sizes, seeds, a cached build found again) each ask.
 */
export function warmStartConversations(
  setup: Pick<ExperimentDeps, "env" | "createPolicy" | "instance">,
  opts: WarmStartOptions,
): Promise<WarmConversation[]> {
  const bySetup = rendered.get(setup) ?? new Map<string, Promise<WarmConversation[]>>();
  rendered.set(setup, bySetup);
  const key = JSON.stringify(opts);
  let data = bySetup.get(key);
  if (!data) {
    data = renderWarmStart(setup, opts);
    data.catch(() => bySetup.delete(key));
    bySetup.set(key, data);
  }
  return data;
}

/**
 * The warm start's data: episodes of the embedded *initial* policy (successes and failures alike)
 * on the train and dev tasks of `suiteSeeds`' instances, under H0 and under the candidate harnesses
 * evolution proposed there, with their instructions and notes. No held-out task is ever run.
 *
 * @example
 * const data = await warmStartConversations(embeddedSetup(defaultEmbeddedSettings), WarmStartOptions.parse({}));
 */
async function renderWarmStart(
  setup: Pick<ExperimentDeps, "env" | "createPolicy" | "instance">,
  opts: WarmStartOptions,
): Promise<WarmConversation[]> {
  const env = new TextEnvironment(setup.env);
  const out: WarmConversation[] = [];
  for (const suiteSeed of opts.suiteSeeds) {
    const inst = await setup.instance(suiteSeed);
    const candidates = inst.evolution.candidates.map((c) => c.spec);
    const rng = createRng(hash32("warm-start", opts.seed + suiteSeed));
    const { policy, take } = recording(setup.createPolicy(suiteSeed));
    const run = async (task: Task, harness: HarnessSpec, k: number) => {
      const seed = hash32(`warm:${suiteSeed}:${task.id}:${harness.id}:${k}`, opts.seed);
      let rec: Recording | undefined;
      const rollout = await rolloutsIn(env, {
        ...policy,
        endEpisode: async (episodeRng) => {
          rec = take(episodeRng);
        },
      })(task, harness, seed);
      if (!rec) return;
      out.push({
        task: { id: task.id, split: task.split, family: task.family, requirements: task.requirements },
        suiteSeed,
        harnessId: harness.id,
        success: rollout.success,
        ...rec,
      });
    };
    for (const task of [...inst.train, ...inst.dev]) {
      for (let k = 0; k < opts.h0Samples; k++) await run(task, inst.evolution.pool.base, k);
      for (let k = 0; k < opts.siblingSamples && candidates.length; k++)
        await run(task, candidates[rng.int(candidates.length)]!, k);
    }
  }
  return out;
}
