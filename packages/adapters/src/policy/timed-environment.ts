import type { Clock, Environment, EnvSession } from "@harness-s/core";

/**
 * `env` with the time each of its calls takes (start, every step, the grading, the close) added to
 * `timing.ms`: what an episode spent in a caller's environment, metered to the caller.
 *
 * @example
 * const timing = { ms: 0 };
 * await runEpisode(task, harness, seed, { env: timedEnvironment(env, timing, systemClock), policy });
 */
export function timedEnvironment(env: Environment, timing: { ms: number }, clock: Clock): Environment {
  const timed = async <T>(call: () => Promise<T>): Promise<T> => {
    const t0 = clock.now();
    try {
      return await call();
    } finally {
      timing.ms += clock.now() - t0;
    }
  };
  return {
    tools: (task) => env.tools(task),
    start: async (task, rng) => {
      const session = await timed(() => env.start(task, rng));
      const out: EnvSession = {
        initial: session.initial,
        act: (action, args) => timed(() => session.act(action, args)),
        finish: (reason, args) => timed(() => session.finish(reason, args)),
      };
      if (session.preview) out.preview = (name) => timed(() => session.preview!(name));
      if (session.inspectSubmit) out.inspectSubmit = (args) => session.inspectSubmit!(args);
      if (session.close) out.close = () => timed(() => session.close!());
      return out;
    },
  };
}
