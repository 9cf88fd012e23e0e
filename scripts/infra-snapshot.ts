// Runs sst.config.ts with SST's own components under Pulumi mocks, offline, and prints every
// resource it declares as JSON: { resources: [{ type, name, inputs }], outputs, builds, links }.
// Needs `.sst/platform` (npm run typecheck:infra installs it). Used by tests/infra.
import { createServer } from "node:http";
import { existsSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const root = resolve(".");
const platform = join(root, ".sst/platform");
const load = (p: string) => import(pathToFileURL(join(platform, p)).href);

const resources: { type: string; name: string; inputs: Record<string, unknown> }[] = [];
const builds: string[] = [];
/** Each handler's linked resources (name → properties), as SST hands them to the build. */
const links: Record<string, Record<string, Record<string, unknown>>> = {};

async function main() {
  if (!existsSync(join(platform, "config.d.ts")))
    throw new Error("no .sst/platform: run `npm run typecheck:infra` first");
  const esbuild = await load("node_modules/esbuild/lib/main.js");
  const out = mkdtempSync(join(tmpdir(), "hs-infra-"));
  const server = buildServer(esbuild, out);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const address = server.address();
  process.env.SST_SERVER = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;

  const pulumi = await load("node_modules/@pulumi/pulumi/index.js");
  pulumi.runtime.setMocks(pulumiMocks(), "harness-s", "test", false);
  const g = globalThis as Record<string, unknown>;
  g.$app = {
    name: "harness-s",
    stage: "test",
    removal: "remove",
    protect: false,
    providers: { aws: { region: "us-east-1" } },
  };
  g.$cli = { paths: { root, work: join(root, ".sst"), platform }, state: { version: {} }, command: "deploy" };
  g.$dev = false;
  process.env.SST_SECRETS = JSON.stringify({});
  Object.assign(g, await load("src/shim/run.js"));
  g.sst = await load("src/components/index.ts");
  g.aws = await load("node_modules/@pulumi/aws/index.js"); // the provider namespace sst.config.ts sees as a global
  const config = (await import(pathToFileURL(join(root, "sst.config.ts")).href)).default as {
    run: () => Promise<Record<string, unknown>>;
  };
  const { run } = await load("src/auto/run.ts");
  // The stack's outputs can resolve before every resource is registered: disconnect() waits for
  // Pulumi's queue of registrations to drain, and a function is registered only after its build
  // answered, so then every build is in. The RPC server is left open (closing it could reset a
  // keep-alive socket SST's client is about to reuse); the process exits instead.
  const outputs = await pulumi.runtime.runInPulumiStack(() => run(config.run));
  await pulumi.runtime.disconnect();
  await new Promise<void>((r) =>
    process.stdout.write(JSON.stringify({ resources, outputs: Object.keys(outputs ?? {}), builds, links }), () => r()),
  );
  process.exit(0);
}

/** The CLI's build RPC: bundles each handler with esbuild into `out`, as `sst deploy` would (a wrong path fails). */
function buildServer(esbuild: { build: (options: Record<string, unknown>) => Promise<unknown> }, out: string) {
  return createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", async () => {
      const { method, params } = JSON.parse(body) as { method: string; params: [Record<string, unknown>] };
      const reply = (result: unknown, error: string | null = null) => res.end(JSON.stringify({ id: 0, result, error }));
      if (method === "Provider.Aws.Bootstrap")
        return reply({
          asset: "mock-assets-bucket",
          assetEcrRegistryId: "123456789012",
          assetEcrUrl: "mock.ecr",
          state: "mock-state-bucket",
        });
      if (method !== "Runtime.Build") return reply(null, `rpc: can't find method ${method}`);
      const handler = String(params[0].handler);
      links[handler] = (params[0].links ?? {}) as Record<string, Record<string, unknown>>;
      const file = handler.slice(0, handler.lastIndexOf("."));
      const dir = join(out, file.replace(/\//g, "_"));
      mkdirSync(dir, { recursive: true });
      try {
        await esbuild.build({
          entryPoints: [join(root, `${file}.ts`)],
          bundle: true,
          platform: "node",
          format: "esm",
          outfile: join(dir, "index.mjs"),
          logLevel: "silent",
          // What the function installs beside its bundle (a native addon) stays out of it, as `sst deploy` does.
          external: [
            "@aws-sdk/*",
            ...Object.keys((params[0].properties as { install?: Record<string, string> } | undefined)?.install ?? {}),
          ],
        });
        builds.push(handler);
        reply({
          handler: `index.${handler.slice(handler.lastIndexOf(".") + 1)}`,
          out: dir,
          errors: [],
          sourcemaps: [],
        });
      } catch (err) {
        reply({ handler: "", out: dir, errors: [String((err as Error).message)], sourcemaps: [] });
      }
    });
  });
}

/**
 * Pulumi's mocks: each resource declared is recorded (with mock state: its ARN, URL, name and the like), and the AWS
 * provider's functions (region, caller identity, partition, policy documents) answer as an account would.
 */
function pulumiMocks() {
  return {
    newResource: (args: { type: string; name: string; inputs: Record<string, unknown> }) => {
      resources.push({ type: args.type, name: args.name, inputs: args.inputs });
      const arn = `arn:aws:mock:us-east-1:123456789012:${args.name}`;
      return {
        id: `${args.name}-id`,
        state: {
          ...args.inputs,
          arn,
          url: `https://mock/${args.name}`,
          name: args.inputs.name ?? args.name,
          functionUrl: `https://mock-url/${args.name}`,
          dnsName: `${args.name}.mock.elb.amazonaws.com`,
          arnSuffix: `mock/${args.name}/0123456789abcdef`, // a load balancer's or target group's, as CloudWatch's dimensions name them
          repositoryUrl: `123456789012.dkr.ecr.us-east-1.amazonaws.com/${args.name.toLowerCase()}`,
        },
      };
    },
    call: (args: { token: string; inputs: Record<string, unknown> }) => {
      if (args.token.endsWith("getRegion")) return { name: "us-east-1", region: "us-east-1", id: "us-east-1" };
      if (args.token.endsWith("getCallerIdentity"))
        return { accountId: "123456789012", arn: "arn:aws:iam::123456789012:user/mock", userId: "mock" };
      if (args.token.endsWith("getPartition")) return { partition: "aws", dnsSuffix: "amazonaws.com", id: "aws" };
      if (args.token.endsWith("getPolicyDocument"))
        return {
          json: JSON.stringify({ Version: "2012-10-17", Statement: args.inputs.statements ?? [] }),
          statements: args.inputs.statements,
        };
      return args.inputs;
    },
  };
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
