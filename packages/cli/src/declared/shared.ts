/** The sweeps `experiment --sweep` can run. */
export const SWEEPS = ["cue", "router", "reanchor"] as const;

/** A folder named by the time now, e.g. `results/2026-12-04T05-00-00-000Z`. */
export const timestamped = (prefix: string) => `${prefix}${new Date().toISOString().replace(/[:.]/g, "-")}`;

/** Where the dbbench commands read their data: `$HARNESS_S_DBBENCH_DIR`, read at the composition root. */
export const DBBENCH_DIR_VARIABLE = "HARNESS_S_DBBENCH_DIR";
