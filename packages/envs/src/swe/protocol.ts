import { z } from "zod";

/** A test list as SWE-bench stores it: a JSON-encoded string, or (SWE-Gym's loaders) a list. */
const TestList = z.union([
  z.array(z.string().min(1).max(1000)).max(5000),
  z
    .string()
    .max(1_000_000)
    .transform((s, ctx) => {
      try {
        return z.array(z.string().min(1).max(1000)).max(5000).parse(JSON.parse(s));
      } catch {
        ctx.addIssue({ code: "custom", message: "not a JSON list of test ids" });
        return z.NEVER;
      }
    }),
]);

/**
 * One instance in SWE-bench's format (SWE-Gym's too): resolved when every FAIL_TO_PASS and
 * PASS_TO_PASS test passes after the model's patch and the test patch are applied.
 */
export const SweInstance = z.looseObject({
  instance_id: z.string().min(1).max(300),
  repo: z.string().min(1).max(300),
  base_commit: z.string().regex(/^[0-9a-f]{7,40}$/),
  problem_statement: z.string().max(200_000),
  patch: z.string().max(2_000_000).default(""),
  test_patch: z.string().max(2_000_000),
  FAIL_TO_PASS: TestList,
  PASS_TO_PASS: TestList,
});
export type SweInstance = z.infer<typeof SweInstance>;

/** SWE-ReX's answers (swerex.runtime.abstract), as its server sends them. */
export const CommandResponse = z.looseObject({
  stdout: z.string(),
  stderr: z.string(),
  exit_code: z.number().int().nullable(),
});
export const Observation = z.looseObject({ output: z.string(), exit_code: z.number().int().nullable() });
export const ReadFileResponse = z.looseObject({
  success: z.boolean().default(true),
  failure_reason: z.string().default(""),
  content: z.string(),
});
export const Done = z.looseObject({ success: z.boolean().default(true), failure_reason: z.string().default("") });
export const IsAlive = z.looseObject({ is_alive: z.boolean() });
/** An exception raised in the runtime, sent with HTTP 511. */
export const SweRexException = z.object({
  swerexception: z.looseObject({ message: z.string(), class_path: z.string() }),
});
