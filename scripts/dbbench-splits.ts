// Writes packages/dbbench/data/splits.json from the bundled rows by SPLIT_RULE (run once; a test checks it).
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { BUNDLED_DATA_DIR, drawSplits, loadSplit } from "@harness-s/dbbench";

const splits = drawSplits(await loadSplit(BUNDLED_DATA_DIR, "standard"), await loadSplit(BUNDLED_DATA_DIR, "dev"));
const lines = Object.entries(splits).map(([k, v]) => `  ${JSON.stringify(k)}: ${JSON.stringify(v)}`);
await writeFile(join(BUNDLED_DATA_DIR, "splits.json"), `{\n${lines.join(",\n")}\n}\n`);
console.log(
  `train ${splits.train.length} (validation ${splits.validation.length}), held-out ${splits.heldout.length}, dev ${splits.dev.length}`,
);
