// The caller-rescue section of `harness-s bench` alone (issue 54, item 5): rollouts/s through the
// service vs in process, for a scripted policy at 0 and 50 ms a turn, at 1, 8 and 32 in flight,
// with the CPU each process spent, in one run; repeated to show the spread.
// Run: node --import tsx scripts/rescue-bench.ts [seconds per figure, default 3] [repeats, default 1]
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { benchRescue } from "../packages/cli/src/commands/bench-rescue.ts";

const seconds = Number(process.argv[2] ?? 3);
const repeats = Number(process.argv[3] ?? 1);
const setup = embeddedSetup(defaultEmbeddedSettings);
const instance = await setup.instance(1);
for (let i = 0; i < repeats; i++) {
  if (repeats > 1) console.log(`run ${i + 1}/${repeats}`);
  for (const line of await benchRescue(instance, setup, seconds)) console.log(line);
}
