// No import: the web console bundles this file for its experiment form.

/**
 * Parses a seed list: comma-separated non-negative integers and inclusive ranges, e.g. `1,2,3` or `1-5,11`.
 * Throws an Error with a readable message on anything else, on a backwards range, or on a
 * repeated seed (a repeated seed would count one replicate twice in the paired statistics).
 *
 * @example
 * parseSeedList("1-3,7"); // [1, 2, 3, 7]
 */
export function parseSeedList(value: string): number[] {
  const seeds: number[] = [];
  for (const part of value.split(",").map((s) => s.trim())) {
    const range = /^(\d+)-(\d+)$/.exec(part);
    if (range) {
      const [from, to] = [Number(range[1]), Number(range[2])];
      if (to < from) throw new Error(`seed range ${part} runs backwards`);
      if (to - from >= 1000) throw new Error(`seed range ${part} is longer than 1000 seeds`);
      for (let s = from; s <= to; s++) seeds.push(s);
    } else if (/^\d+$/.test(part)) seeds.push(Number(part));
    else
      throw new Error(
        `seeds must be comma-separated non-negative integers or ranges, e.g. 1,2,3 or 1-5 (got ${JSON.stringify(part)})`,
      );
  }
  const seen = new Set<number>();
  for (const s of seeds) {
    if (seen.has(s)) throw new Error(`seed ${s} is listed twice`);
    seen.add(s);
  }
  return seeds;
}
