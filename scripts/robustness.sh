#!/usr/bin/env bash
# Runs the default experiment on seeds 1-15 (three runs, two at a time) with extra CLI flags,
# then pools the paired harness-s differences over all 15 seeds.
set -euo pipefail
tag=${TAG:-rob}
for s in 1,2,3,4,5 6,7,8,9,10; do node --import tsx packages/cli/src/main.ts experiment --seeds $s --out /tmp/$tag-$s "$@" >/dev/null 2>&1 & done; wait
node --import tsx packages/cli/src/main.ts experiment --seeds 11,12,13,14,15 --out /tmp/$tag-11,12,13,14,15 "$@" >/dev/null 2>&1
node -e '
const fs=require("fs"); const tag=process.argv[1];
const runs=["1,2,3,4,5","6,7,8,9,10","11,12,13,14,15"].map(s=>JSON.parse(fs.readFileSync(`/tmp/${tag}-${s}/summary.json`)));
const per=(arm)=>runs.flatMap(r=>r.arms.find(a=>a.name===arm).perSeed);
const hs=per("harness-s");
for (const base of ["grpo","grpo-budget","harness-s-random","harness-s-noreanchor","harness-s-single-voter"]) {
  const b=per(base); const out=[];
  for (const m of [["train","avgAt3"],["heldout","avgAt3"]]) {
    const d=hs.map((x,i)=>x.h0[m[0]][m[1]]-b[i].h0[m[0]][m[1]]);
    const mean=d.reduce((s,x)=>s+x,0)/d.length, sd=Math.sqrt(d.reduce((s,x)=>s+(x-mean)**2,0)/(d.length-1));
    out.push(`${m[0]} ${(100*mean).toFixed(1)}±${(100*sd).toFixed(1)} wins ${d.filter(x=>x>0).length}/${d.length}`);
  }
  console.log(`harness-s − ${base.padEnd(22)} ${out.join("   ")}`);
}
const g=per("grpo"); const r=runs.map(r=>r.arms.find(a=>a.name==="harness-s").rollouts/r.arms.find(a=>a.name==="grpo").rollouts);
console.log("rollout ratio", r.map(x=>x.toFixed(3)).join(" "), " initial train", runs.map(r=>(100*r.initial.train.avgAt3).toFixed(1)).join(" "), " grpo train", runs.map(r=>(100*r.arms.find(a=>a.name==="grpo").h0.train.avgAt3).toFixed(1)).join(" "));
' "$tag"
