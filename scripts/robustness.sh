#!/usr/bin/env bash
# Runs the default experiment on seeds 1-25 (two processes: 1-5 and 6-25) with extra CLI flags,
# then pools the paired harness-s differences over all 25 seeds, overall and per task family.
# ~4 min on 2 cores. Usage: scripts/robustness.sh [experiment flags]
set -euo pipefail
tag=${TAG:-rob}
runs=("1-5" "6-25")
for s in "${runs[@]}"; do node --import tsx packages/cli/src/main.ts experiment --seeds "$s" --out "/tmp/$tag-${s%%-*}" "$@" >/dev/null 2>&1 & done; wait
node -e '
const fs=require("fs"); const tag=process.argv[1];
const runs=["1","6"].map(s=>JSON.parse(fs.readFileSync(`/tmp/${tag}-${s}/summary.json`)));
const per=(arm)=>runs.flatMap(r=>r.arms.find(a=>a.name===arm).perSeed);
const stat=(d)=>{const m=d.reduce((s,x)=>s+x,0)/d.length, sd=Math.sqrt(d.reduce((s,x)=>s+(x-m)**2,0)/(d.length-1)); return `${(100*m).toFixed(1)}±${(100*sd).toFixed(1)} wins ${d.filter(x=>x>0).length}/${d.length}`;};
const hs=per("harness-s");
for (const base of ["grpo","grpo-budget","harness-s-random","harness-s-noreanchor","harness-s-single-voter"]) {
  const b=per(base);
  const out=["train","heldout"].map(sp=>`${sp} ${stat(hs.map((x,i)=>x.h0[sp].avgAt3-b[i].h0[sp].avgAt3))}`);
  console.log(`harness-s − ${base.padEnd(22)} ${out.join("   ")}`);
}
const b=per("grpo-budget");
for (const f of Object.keys(hs[0].byFamily.heldout)) console.log(`held-out ${f.padEnd(7)} harness-s − grpo-budget ${stat(hs.map((x,i)=>x.byFamily.heldout[f].avgAt3-b[i].byFamily.heldout[f].avgAt3))}`);
' "$tag"
