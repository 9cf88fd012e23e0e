import type { PolicyObservation } from "@harness-s/core";

/**
 * Feature names built once and reused: a weight lookup then hashes a string V8 has hashed before
 * instead of a fresh concatenation (scoring is most of an embedded rollout's CPU). Cleared when it
 * grows past {@link MAX_NAMED_FEATURES}, so events an environment makes up cannot grow it without end.
 */
const featureNames = new Map<string, Map<string, Map<string, string>>>();
const MAX_NAMED_FEATURES = 100_000;
let namedFeatures = 0;

function featureName(family: string, kind: string, value: string): string {
  let kinds = featureNames.get(family);
  if (!kinds) {
    kinds = new Map();
    featureNames.set(family, kinds);
  }
  let names = kinds.get(kind);
  if (!names) {
    names = new Map();
    kinds.set(kind, names);
  }
  let name = names.get(value);
  if (name === undefined) {
    if (++namedFeatures > MAX_NAMED_FEATURES) {
      featureNames.clear();
      namedFeatures = 0;
    }
    name = `${family}|${kind}${value}`;
    names.set(value, name);
  }
  return name;
}

/** How many feature names are remembered now (at most {@link MAX_NAMED_FEATURES}). */
export function rememberedFeatureNames(): number {
  let held = 0;
  for (const kinds of featureNames.values()) for (const names of kinds.values()) held += names.size;
  return held;
}

/** Active features of an observation, prefixed by family so families never share weights. */
export function featuresOf(obs: PolicyObservation): string[] {
  const f = obs.family;
  const features = [featureName(f, "bias", ""), featureName(f, "ev:", obs.event)];
  for (const x of obs.facts) features.push(featureName(f, "has:", x));
  for (const t of obs.taskTags) features.push(featureName(f, "tag:", t));
  return features;
}

/** One feature's weights by action, and the same laid out in the order of the last tool list asked for. */
interface Row {
  weights: Map<string, number>;
  dense?: { tools: readonly string[]; values: Float64Array };
}

/** Weights indexed feature → action → weight, so that scoring builds no key strings. */
export type WeightIndex = Map<string, Row>;

export function setIndexed(index: WeightIndex, key: string, value: number): void {
  const cut = key.lastIndexOf("|");
  const feature = key.slice(0, cut);
  let row = index.get(feature);
  if (!row) {
    row = { weights: new Map() };
    index.set(feature, row);
  }
  row.weights.set(key.slice(cut + 1), value);
  row.dense = undefined;
}

export function indexWeights(flat: ReadonlyMap<string, number>): WeightIndex {
  const index: WeightIndex = new Map();
  for (const [key, value] of flat) setIndexed(index, key, value);
  return index;
}

/** A row's weights for `tools`, in their order (0 where it has none). */
function denseRow(row: Row, tools: readonly string[]): Float64Array {
  if (row.dense?.tools !== tools)
    row.dense = { tools, values: Float64Array.from(tools, (a) => row.weights.get(a) ?? 0) };
  return row.dense.values;
}

/**
 * Σ θ[feature|a] over the observation's features, for each of its tools in order; each sum is
 * taken feature by feature in the features' order, so the result does not depend on the layout.
 */
export function featureLogits(index: WeightIndex, obs: PolicyObservation): number[] {
  const tools = obs.tools;
  const logits = new Array<number>(tools.length).fill(0);
  for (const feature of featuresOf(obs)) {
    const row = index.get(feature);
    if (!row) continue;
    const values = denseRow(row, tools);
    for (let j = 0; j < tools.length; j++) logits[j]! += values[j]!;
  }
  return logits;
}
