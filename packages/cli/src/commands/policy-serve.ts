import { LogLinearPolicy } from "@harness-s/policy";
import { embeddedPolicyPrior } from "@harness-s/envs";
import { listen } from "@harness-s/functions/api";
import { createPolicyServer } from "@harness-s/functions/policy";

/** `harness-s policy-serve`: the embedded CPU policy behind the policy endpoint's HTTP protocol. */
export async function policyServeCommand(opts: { port: number; host: string; cueStrength: number }): Promise<void> {
  const app = createPolicyServer(
    () => new LogLinearPolicy({ prior: embeddedPolicyPrior(), cueStrength: opts.cueStrength }),
  );
  const server = await listen(app.fetch, opts.port, opts.host);
  console.log(
    `harness-s policy endpoint listening on ${server.url} (embedded policy, cue strength ${opts.cueStrength}); set PolicyEndpointUrl to it`,
  );
  const stop = async () => {
    await server.close();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop());
  process.once("SIGTERM", () => void stop());
}
