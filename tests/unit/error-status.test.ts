import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { CORE_ERROR_CODES, HarnessSError, ValidationError } from "@harness-s/core";
import { ExperimentCancelledError, RolloutTimeoutError } from "@harness-s/core/experiment";
import { StalePolicyVersionError, policyVersionMismatch } from "@harness-s/core/dispatch";
import { ADAPTERS_ERROR_CODES, PolicyEndpointError } from "@harness-s/adapters";
import { DBBENCH_ERROR_CODES, SqlServerError } from "@harness-s/dbbench";
import { errorResponse } from "../../functions/api/http.ts";
import { ERROR_STATUS, TRANSPORT_ERROR_CODES, statusOf } from "../../functions/api/errors.ts";

/** An app whose one route throws `err`, answered by the API's one error mapping. */
const answer = async (err: unknown) => {
  const app = new Hono().get("/", () => Promise.reject(err)).onError(errorResponse);
  const res = await app.request("/");
  return {
    status: res.status,
    body: (await res.json()) as { error: { code: string; message: string; issues?: string[] } },
  };
};

describe("one error vocabulary", () => {
  it("every code of every package has its own HTTP status (none falls through to 500)", () => {
    for (const code of [
      ...CORE_ERROR_CODES,
      ...ADAPTERS_ERROR_CODES,
      ...DBBENCH_ERROR_CODES,
      ...TRANSPORT_ERROR_CODES,
    ]) {
      expect(statusOf(code), code).toBe(ERROR_STATUS[code]);
      expect(statusOf(code), code).not.toBe(500);
    }
    expect(Object.keys(ERROR_STATUS).sort()).toEqual(
      [...CORE_ERROR_CODES, ...ADAPTERS_ERROR_CODES, ...DBBENCH_ERROR_CODES, ...TRANSPORT_ERROR_CODES].sort(),
    );
  });

  it("answers domain errors with their code and status; an undeclared code is a 500 that names nothing", async () => {
    expect(await answer(new StalePolicyVersionError(3, 2))).toMatchObject({
      status: 409,
      body: { error: { code: "STALE_POLICY_VERSION" } },
    });
    expect(await answer(policyVersionMismatch("p", 1, 2))).toMatchObject({
      status: 409,
      body: { error: { code: "STALE_POLICY_VERSION" } },
    });
    expect(await answer(new RolloutTimeoutError("job", 0, 10))).toMatchObject({
      status: 504,
      body: { error: { code: "ROLLOUT_TIMEOUT" } },
    });
    expect(await answer(new ExperimentCancelledError("e1"))).toMatchObject({ status: 409 });
    expect(await answer(new PolicyEndpointError("down"))).toMatchObject({
      status: 502,
      body: { error: { code: "POLICY_ENDPOINT_FAILED" } },
    });
    expect(await answer(new SqlServerError("gone"))).toMatchObject({ status: 503 });
    expect(await answer(new ValidationError("body", ["x: required"]))).toMatchObject({
      status: 400,
      body: { error: { issues: ["x: required"] } },
    });
    expect(await answer(new HarnessSError("SOMETHING_NEW", "secret detail"))).toEqual({
      status: 500,
      body: { error: { code: "INTERNAL", message: "internal error" } },
    });
  });
});
