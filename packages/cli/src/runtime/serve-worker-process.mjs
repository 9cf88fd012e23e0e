// Entry of each of `harness-s serve`'s worker processes (`--dispatch-processes`; see serve-workers.ts).
// Its body runs from the CLI's build when that is as new as its sources, else from source through tsx (runBody).
import { runBody } from "../../bin/build.mjs";

await runBody("serve-worker-process", new URL("./serve-worker-process.ts", import.meta.url).href);
