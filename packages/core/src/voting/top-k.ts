import { z } from "zod";

/**
 * How many siblings the router picks (a rescue's Top-k, the ranking a caller asks for): at least
 * one, at most {@link MAX_TOP_K} (each picked sibling costs a rescue's rollouts), 2 unless told.
 * Declared once; every request, message and config that carries a `k` derives its field from it.
 */
export const MAX_TOP_K = 8;
export const DEFAULT_TOP_K = 2;
export const TopK = z.number().int().min(1).max(MAX_TOP_K);
export type TopK = z.infer<typeof TopK>;
