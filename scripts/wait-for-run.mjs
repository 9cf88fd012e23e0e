// Polls an experiment until it ends, printing its state and label whenever they change; then its quote beside what it
// was billed. Exit 1 if it does not end within the limit (default 600 s).
//
//   node scripts/wait-for-run.mjs <api> <key> <experiment id> [seconds]
const [api, key, id, seconds = "600"] = process.argv.slice(2);
const ENDS = ["done", "failed", "stopped", "cancelled"];
const until = Date.now() + Number(seconds) * 1000;
let last = "";
while (Date.now() < until) {
  const res = await fetch(`${api}/v1/experiments/${id}`, { headers: { authorization: `Bearer ${key}` } });
  const run = await res.json();
  if (!res.ok) {
    console.error(`${res.status}: ${JSON.stringify(run)}`);
    process.exit(1);
  }
  const line = `${run.status}: ${run.progress.label}`;
  if (ENDS.includes(run.status)) {
    const billed = run.actual ? `, billed ${run.actual.usage.rollouts} rollouts, ${run.actual.chargeUsd} USD` : "";
    console.log(
      `${run.status}: quoted ${run.quote?.rollouts} rollouts, ${run.quote?.chargeUsd} USD${billed}${run.error ? `; ${run.errorCode}: ${run.error}` : ""}`,
    );
    process.exit(run.status === "done" ? 0 : 1);
  }
  if (line !== last) console.error(line);
  last = line;
  await new Promise((r) => setTimeout(r, 1000));
}
console.error(`${id} did not end within ${seconds} s`);
process.exit(1);
