import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { clientVenv } from "../client-venv.ts";

// Issue 55, acceptance 1: the client alone. scripts/client-venv.sh makes an empty venv and pip
// installs packages/client-py into it, nothing else, from the local indexes; what that install
// added is recorded, and `import harness_s_client` is run from outside the source tree. Then the
// client's own tests run in that venv (no torch there): calls, retries, typed errors, the
// converters against verl's and SkyRL's declared types, the hooks over a stand-in service, and
// mypy --strict on a user script that imports the installed client.
const client = fileURLToPath(new URL("../../packages/client-py/", import.meta.url));
const run = promisify(execFile);

describe("harness-s-client, installed alone", () => {
  it("pulls in httpx and its own dependencies only (no torch), imports from site-packages, and its tests pass there", async () => {
    const python = await clientVenv();
    const bare = (await readFile(`${client}.venv/.bare-install.txt`, "utf8")).trim().split("\n");
    const names = bare.map((line) => line.split("==")[0]!.toLowerCase()).sort();
    expect(names).toEqual(
      expect.arrayContaining(["harness-s-client", "httpx", "httpcore", "h11", "anyio", "idna", "certifi"]),
    );
    // Nothing beyond httpx's own tree (typing_extensions and sniffio are anyio's, by version).
    expect(
      names.filter(
        (n) =>
          ![
            "harness-s-client",
            "httpx",
            "httpcore",
            "h11",
            "anyio",
            "idna",
            "certifi",
            "sniffio",
            "typing-extensions",
            "typing_extensions",
          ].includes(n),
      ),
    ).toEqual([]);
    expect(await readFile(`${client}.venv/.bare-import.txt`, "utf8")).toMatch(
      /site-packages\/harness_s_client\/__init__\.py/,
    );
    const torch = await run(python, ["-c", "import importlib.util as u; print(u.find_spec('torch') is None)"]);
    expect(torch.stdout.trim()).toBe("True");
    const { stdout } = await run(python, ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:warnings"], {
      cwd: client,
      timeout: 300_000,
    });
    expect(stdout).toMatch(/(\d+) passed/);
    expect(stdout).not.toMatch(/failed|error/i);
  }, 600_000);
});
