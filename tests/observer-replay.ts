import {
  Mailbox,
  RelayEnvironment,
  type AgentInput,
  type ObserverFactory,
  type RelayOut,
} from "@harness-s/core/gateway";
import type { Rollout, Task } from "@harness-s/core";

type Seen = { event: string; facts: string[] };

/**
 * What the gateway would read from a rollout's tool outputs: each tool step's action, arguments
 * and output text handed through a RelayEnvironment with `observer`, as an agent running the
 * environment itself would send them. Gate interceptions and the submit are not tool outputs.
 */
export async function readThroughGateway(rollout: Rollout, task: Task, observer: ObserverFactory): Promise<Seen[]> {
  const channel = { toAgent: new Mailbox<RelayOut>(), fromAgent: new Mailbox<AgentInput>() };
  const steps = toolSteps(rollout);
  const env = new RelayEnvironment(
    "replay",
    [...new Set(steps.map((s) => s.action))],
    channel,
    observer(task),
    () => undefined,
  );
  const session = await env.start();
  const seen: Seen[] = [];
  for (const step of steps) {
    channel.fromAgent.put({ kind: "turn", messages: [{ role: "tool", content: step.resultText ?? "" }] });
    const out = await session.act(step.action, step.args);
    seen.push({ event: out.event, facts: [...out.facts].sort() });
  }
  return seen;
}

/** What the environment itself said after each of those steps: its event, and the facts the next turn saw. */
export function environmentSaid(rollout: Rollout): Seen[] {
  return toolSteps(rollout).map((step) => {
    const next = rollout.steps[rollout.steps.indexOf(step) + 1];
    return { event: step.result, facts: [...(next?.observation.facts ?? [])].sort() };
  });
}

const toolSteps = (rollout: Rollout) =>
  rollout.steps.filter((s) => s.action !== "submit" && !s.intercepted && s.resultText !== undefined);
