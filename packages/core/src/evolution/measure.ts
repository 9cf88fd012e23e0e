import type { HarnessSpec } from "../harness/spec.ts";
import type { Rollout } from "../rollout/types.ts";
import type { Task } from "../task.ts";
import { hash32 } from "../util/rng.ts";
import type { EvolutionConfig, EvolutionDeps, EvolutionStop, Measured } from "./evolution-types.ts";

export type Meter = { spent: number; stopped?: EvolutionStop };
export type Measure = (spec: HarnessSpec, tasks?: readonly Task[]) => Promise<Measured>;

export async function measureOnDev(
  spec: HarnessSpec,
  tasks: readonly Task[],
  config: EvolutionConfig,
  deps: EvolutionDeps,
  meter: Meter,
): Promise<Measured> {
  const rates = new Map<string, number>();
  const rollouts: Rollout[] = [];
  for (const task of tasks) {
    const runs = await Promise.all(
      Array.from({ length: config.trials }, (_, i) =>
        deps.runRollout(task, spec, hash32(`evo:${task.id}:${i}`, deps.rng.seed)),
      ),
    );
    meter.spent += runs.length;
    rates.set(task.id, runs.filter((r) => r.success).length / runs.length);
    rollouts.push(...runs);
  }
  return { rates, rollouts };
}

/** Whether the budget can pay for measuring `tasks` tasks once more; marks the stop when it cannot. */
function affordable(tasks: number, config: EvolutionConfig, meter: Meter): boolean {
  if (config.maxRollouts === undefined || meter.spent + tasks * config.trials <= config.maxRollouts) return true;
  meter.stopped = "rollout budget spent";
  return false;
}

/**
 * A candidate's measurement: straight on every dev task, or (with `screenTasks`) first on a
 * minibatch of the parent's failures and, only when it repairs one there, on the rest too.
 * Undefined when it was screened out or the budget ran out.
 */
export async function measureCandidate(
  spec: HarnessSpec,
  config: EvolutionConfig,
  deps: EvolutionDeps,
  h0: Measured,
  parentFailures: readonly string[],
  measure: Measure,
  meter: Meter,
) {
  if (config.screenTasks === undefined)
    return affordable(deps.devTasks.length, config, meter) ? measure(spec) : undefined;
  const failing = new Set(parentFailures);
  const order = [...deps.devTasks].sort((a, b) => Number(failing.has(b.id)) - Number(failing.has(a.id)));
  const screen = order.slice(0, config.screenTasks);
  if (!affordable(screen.length, config, meter)) return undefined;
  const first = await measure(spec, screen);
  if (!screen.some((t) => first.rates.get(t.id)! - h0.rates.get(t.id)! >= config.repairMargin)) return undefined;
  const rest = order.slice(config.screenTasks);
  if (!affordable(rest.length, config, meter)) return undefined;
  const second = await measure(spec, rest);
  return { rates: new Map([...first.rates, ...second.rates]), rollouts: [...first.rollouts, ...second.rollouts] };
}
