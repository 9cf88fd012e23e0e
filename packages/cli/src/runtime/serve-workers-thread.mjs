// Entry of `harness-s serve`'s workers' thread (see serve-workers.ts).
// Its body runs from the CLI's build when that is as new as its sources, else from source through tsx (runBody).
import { runBody } from "../../bin/build.mjs";

await runBody("serve-workers-thread", new URL("./serve-workers-thread.ts", import.meta.url).href);
