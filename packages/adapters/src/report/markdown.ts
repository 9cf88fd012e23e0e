import { mean } from "@harness-s/core/metrics";
import type { ExperimentSummary } from "@harness-s/core/experiment";
import { acceptanceChecks, arm, interval, meanStd, paired, protocolNote, pts, signed, type Metric } from "./stats.ts";
import { renderFamilies } from "./families.ts";
import { renderHarm, type PoolsFile } from "./harm.ts";
import { hasUtilityCurve } from "./summary-plots.ts";

/** What a report adds to the summary when the run has it. */
export interface ReportExtras {
  pools?: PoolsFile;
  /** A line under the title (a run stopped before its end: what its figures cover). */
  note?: string;
  /** What the title names: the run's environment (default the embedded suite) and the model it trained, if any. */
  title?: { env: string; model?: string };
}

const ABLATION_QUESTION: Record<string, string> = {
  "harness-s-random": "whether the router's choice matters (k siblings drawn uniformly instead of by the vote)",
  "harness-s-noreanchor":
    "whether re-measuring the profiles under the current policy matters (they keep the policy-version-0 evidence plus online rescue outcomes)",
  "harness-s-single-voter":
    "whether combining voters that look at different evidence matters (failure-tag evidence alone)",
};

/** One sentence per ablation, read off its paired differences: direction only when it clears the seed noise. */
function ablationSentence(s: ExperimentSummary, name: string): string | undefined {
  const a = arm(s, name);
  const hs = arm(s, "harness-s");
  if (!a || !hs) return undefined;
  const parts = (["train.avgAt3", "heldout.avgAt3"] as const).map((m) => {
    const p = paired(a, hs, m);
    const [lo, hi] = p.ci95;
    const verdict =
      lo <= 0 && hi >= 0 ? "within seed noise" : p.mean < 0 ? "worse than harness-s" : "better than harness-s";
    return `${m.startsWith("train") ? "train" : "held-out"} ${signed(p.mean)} (${verdict}, ${p.wins}/${p.n} seeds better)`;
  });
  const rescues = (x: typeof a) => mean(x.perSeed.map((p) => p.rescue.triggered));
  const replaced = (x: typeof a) => mean(x.perSeed.map((p) => p.rescue.replaced));
  return `- **${name}** asks ${ABLATION_QUESTION[name]}: ${parts.join("; ")}. It triggered ${rescues(a).toFixed(1)} rescues per seed and replaced ${replaced(a).toFixed(1)} groups, against ${rescues(hs).toFixed(1)} and ${replaced(hs).toFixed(1)} for harness-s.`;
}

function armTable(s: ExperimentSummary): string[] {
  const grpo = arm(s, "grpo");
  const lines = [
    "| arm | rollouts (× grpo) | H0 train Avg@3 | H0 train Pass@3 | H0 held-out Avg@3 | H0 held-out Pass@3 |",
    "|---|---|---|---|---|---|",
    `| initial policy | — | ${pts(s.initial.train.avgAt3)} | ${pts(s.initial.train.passAt3)} | ${pts(s.initial.heldout.avgAt3)} | ${pts(s.initial.heldout.passAt3)} |`,
  ];
  for (const a of s.arms) {
    const cell = (m: Metric) => {
      const v = meanStd(a, m);
      return `${pts(v.mean)} ± ${pts(v.std)}`;
    };
    const ratio = grpo ? ` (${(a.rollouts / grpo.rollouts).toFixed(2)})` : "";
    lines.push(
      `| ${a.name} | ${a.rollouts.toFixed(0)}${ratio} | ${cell("train.avgAt3")} | ${cell("train.passAt3")} | ${cell("heldout.avgAt3")} | ${cell("heldout.passAt3")} |`,
    );
  }
  return lines;
}

function pairedLine(s: ExperimentSummary, a: string, b: string): string | undefined {
  const x = arm(s, a);
  const y = arm(s, b);
  if (!x || !y) return undefined;
  const cells = (["train.avgAt3", "heldout.avgAt3"] as const).map((m) => {
    const p = paired(x, y, m);
    return `${signed(p.mean)} ± ${pts(p.std)} (${p.wins}/${p.n} seeds better; 95% CI ${interval(p.ci95)}; sign test p ${p.signP < 0.001 ? "< 0.001" : `= ${p.signP.toFixed(3)}`}; per seed ${p.diffs.map(signed).join(", ")})`;
  });
  return `| ${a} − ${b} | ${cells[0]} | ${cells[1]} |`;
}

/**
 * The experiment report's lines: tables with spread over seeds, paired differences, ablations,
 * suite figures and, with the pools, the siblings' side effects. The CLI appends its sweeps.
 */
export function reportLines(s: ExperimentSummary, extras: ReportExtras = {}): string[] {
  const out: string[] = [];
  out.push(
    `# Harness-S ${extras.title?.env ?? "embedded"} experiment${extras.title?.model ? `, model ${extras.title.model}` : ""}`,
    "",
  );
  if (extras.note) out.push(`> ${extras.note}`, "");
  const note = protocolNote(s);
  if (note) out.push(`> **${note}**`, "");
  const shared = new Set(Object.values(s.poolVersions)).size === 1;
  out.push(
    `Seeds ${s.seeds.join(", ")}; ${shared ? `one suite instance and pool (${Object.values(s.poolVersions)[0]}) for every seed` : "each seed is an independent replicate: its own suite instance and its own evolved, frozen pool"}. All scores are under **H0** unless marked Rank-1, in points (%), mean ± sample std over seeds.`,
    "",
  );
  out.push("## Arms", "", ...armTable(s), "");
  out.push("![H0 Avg@3 over training](curves.png)", "");
  out.push("## Paired differences (H0 Avg@3)", "", "| comparison | train | held-out |", "|---|---|---|");
  for (const [a, b] of [
    ["harness-s", "grpo"],
    ["harness-s", "grpo-budget"],
    ["grpo-budget", "grpo"],
  ] as const) {
    const line = pairedLine(s, a, b);
    if (line) out.push(line);
  }
  out.push("", ...renderFamilies(s));
  out.push("## Acceptance figures", "", "| check | result | measured |", "|---|---|---|");
  for (const c of acceptanceChecks(s)) out.push(`| ${c.name} | ${c.pass ? "pass" : "**FAIL**"} | ${c.detail} |`);
  out.push("", "## Ablations", "", "| ablation − harness-s | train | held-out |", "|---|---|---|");
  for (const name of ["harness-s-random", "harness-s-noreanchor", "harness-s-single-voter"]) {
    const line = pairedLine(s, name, "harness-s");
    if (line) out.push(line);
  }
  out.push(
    "",
    "A difference counts as more than seed noise when the 95% t interval of its mean over seeds excludes 0. The sign test asks only how many seeds went each way (ties left out); with 5 seeds even 5/5 gives p = 0.0625.",
    "",
  );
  for (const name of ["harness-s-random", "harness-s-noreanchor", "harness-s-single-voter"]) {
    const line = ablationSentence(s, name);
    if (line) out.push(line);
  }
  out.push(...routerSection(s), ...rank1Section(s), ...behaviourSection(s), ...suiteSection(s));
  if (extras.pools) out.push(...renderHarm(extras.pools));
  return out;
}

/** The experiment report as markdown: {@link reportLines}, one a line. */
export function renderReport(s: ExperimentSummary, extras: ReportExtras = {}): string {
  return reportLines(s, extras).join("\n");
}

/** The router's rescues and its audited hit rate per arm. */
function routerSection(s: ExperimentSummary): string[] {
  const out: string[] = [];
  out.push("", "## Router", "");
  out.push(
    "| arm | rescues triggered (mean/seed) | replaced | dropped | router hit rate (audited, rescuable) | random-k hit chance |",
    "|---|---|---|---|---|---|",
  );
  for (const a of s.arms.filter((x) => x.rank1 !== undefined)) {
    const r = a.perSeed.map((p) => p.rescue);
    const acc = a.perSeed.map((p) => p.routerAccuracy).filter((x) => x && x.rescuable > 0);
    const rescuable = acc.reduce((n, x) => n + x!.rescuable, 0);
    const hit = rescuable ? acc.reduce((n, x) => n + x!.hitRate * x!.rescuable, 0) / rescuable : NaN;
    const rnd = rescuable ? acc.reduce((n, x) => n + x!.randomHitRate * x!.rescuable, 0) / rescuable : NaN;
    out.push(
      `| ${a.name} | ${mean(r.map((x) => x.triggered)).toFixed(1)} | ${mean(r.map((x) => x.replaced)).toFixed(1)} | ${mean(r.map((x) => x.dropped)).toFixed(1)} | ${Number.isNaN(hit) ? "—" : `${pts(hit)} (${rescuable})`} | ${Number.isNaN(rnd) ? "—" : pts(rnd)} |`,
    );
  }
  out.push(
    "",
    "Router accuracy: on every third routing decision, every sibling is run on that task (diagnostic rollouts, not counted in any budget); a hit means at least one chosen sibling had the best hindsight success rate, among decisions where some sibling succeeded at all.",
    "",
  );
  return out;
}

/**
 * What the Rank-1 gaps say, and no more: the siblings' behaviour moved into the policy only where H0 gained and the
 * gap to Rank-1 closed.
 */
function rank1Reading(gapBefore: number, gapAfter: number, h0Gain: number): string {
  if (gapBefore === 0 && gapAfter === 0 && h0Gain === 0)
    return "no difference before or after, and H0 did not move: these figures say nothing about what moved into the policy.";
  if (h0Gain > 0 && gapAfter < gapBefore)
    return "H0 gained and the gap to Rank-1 closed: the behaviour the siblings elicited moved, at least in part, into the policy.";
  return "the gap did not close with H0 gaining: no sign here that the siblings' behaviour moved into the policy.";
}

/** Rank-1 inference before and after harness-s training. */
function rank1Section(s: ExperimentSummary): string[] {
  const out: string[] = [];
  const hs = arm(s, "harness-s");
  if (hs?.rank1) {
    out.push("## Rank-1 inference (held-out Pass@3)", "");
    out.push(
      `Before training: Rank-1 ${pts(hs.rank1.before.heldout.passAt3)} vs H0 ${pts(s.initial.heldout.passAt3)} (gap ${signed(hs.rank1.before.heldout.passAt3 - s.initial.heldout.passAt3)}).`,
    );
    const before = hs.rank1.before.heldout.passAt3 - s.initial.heldout.passAt3;
    const after = hs.rank1.after.heldout.passAt3 - hs.h0.heldout.passAt3;
    out.push(
      `After harness-s training: Rank-1 ${pts(hs.rank1.after.heldout.passAt3)} vs H0 ${pts(hs.h0.heldout.passAt3)} (gap ${signed(after)}): ${rank1Reading(before, after, hs.h0.heldout.passAt3 - s.initial.heldout.passAt3)}`,
      "",
    );
  }
  return out;
}

/** Behaviours under H0 on held-out tasks, per arm. */
function behaviourSection(s: ExperimentSummary): string[] {
  const out: string[] = [];
  out.push(
    "## Behaviours under H0 (held-out)",
    "",
    "verify-before-submit: share of submitted edits that were checked after the last edit; assertion-fallback: share of episodes that met a blocked test runner in which the agent wrote assertions.",
    "",
    "| arm | verify-before-submit | assertion-fallback |",
    "|---|---|---|",
  );
  out.push(
    `| initial | ${pts(s.initial.behaviours["verify-before-submit"] ?? 0)} | ${pts(s.initial.behaviours["assertion-fallback"] ?? 0)} |`,
  );
  for (const a of s.arms) {
    const b = (n: string) => pts(mean(a.perSeed.map((p) => p.behaviours[n] ?? 0)));
    out.push(`| ${a.name} | ${b("verify-before-submit")} | ${b("assertion-fallback")} |`);
  }
  return out;
}

/** The suite's locality, complementarity and nonstationarity. */
function suiteSection(s: ExperimentSummary): string[] {
  const out: string[] = [];
  out.push("", "## Suite properties", "");
  out.push(`- **Locality** ${s.suite.locality.toFixed(3)}: ${String(s.suite.details.localityDefinition)}.`);
  out.push(
    `- **Complementarity** ${s.suite.complementarity.toFixed(3)}: ${String(s.suite.details.complementarityDefinition)}.`,
  );
  out.push(
    `- **Nonstationarity** ${s.suite.nonstationarity.toFixed(3)}: ${String(s.suite.details.nonstationarityDefinition)}. 0 = same ranking, 0.5 = unrelated, 1 = reversed.`,
  );
  out.push(
    "",
    ...(hasUtilityCurve(s)
      ? [
          "![Rescue utility by repair direction over training](utilities.png)",
          "",
          "Step 0 is measured on dev under the initial policy during evolution; later points come from the re-anchoring probes (a handful of dev tasks each, so single points are noisy).",
        ]
      : [
          "No utilities plot: the siblings' utilities were measured at one step only (no re-anchoring ran), which makes no curve.",
        ]),
    "",
  );
  return out;
}
