import { z } from "zod";

/**
 * The numbers every store can hold: 0, or a magnitude from `minMagnitude` (DynamoDB refuses
 * magnitudes under 1e-130) to `maxMagnitude` (past it the SDK refuses to marshal a number, and
 * JSON's doubles stop being exact integers). Request bodies are held to it before any schema reads
 * them, so no value a caller sends reaches a store it cannot be written to.
 */
export const STORABLE_NUMBER = { minMagnitude: 1e-100, maxMagnitude: Number.MAX_SAFE_INTEGER } as const;

/** Whether `n` is a number every store can hold ({@link STORABLE_NUMBER}). */
export const storable = (n: number): boolean =>
  n === 0 || (Math.abs(n) >= STORABLE_NUMBER.minMagnitude && Math.abs(n) <= STORABLE_NUMBER.maxMagnitude);

const DIGITS = /^\d{1,15}$/;
const DECIMAL = /^\d{1,15}(?:\.\d{1,6})?$/;

/**
 * A query parameter holding a whole number written in plain decimal digits, from `min` to `max`:
 * `0x10`, ` 5`, `2e1`, `5.0` and `+5` are refused (a bare `Number()` takes each of them).
 */
export const queryInteger = (min: number, max: number) =>
  z
    .string()
    .regex(DIGITS, "a whole number in decimal digits")
    .meta({ description: `a whole number from ${min} to ${max}, in decimal digits` })
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

/**
 * A query parameter holding a plain decimal number (digits, an optional point and up to six decimals), from `min` to
 * `max`.
 */
export const queryDecimal = (min: number, max: number) =>
  z
    .string()
    .regex(DECIMAL, "a number in decimal digits")
    .meta({ description: `a number from ${min} to ${max}, in decimal digits` })
    .transform(Number)
    .pipe(z.number().min(min).max(max));
