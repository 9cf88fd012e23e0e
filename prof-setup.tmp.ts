import { expect } from "vitest";
import { Session } from "node:inspector/promises";
import { writeFileSync } from "node:fs";
import { afterAll, beforeAll } from "vitest";
const s = new Session();
beforeAll(async () => { s.connect(); await s.post("Profiler.enable"); await s.post("Profiler.setSamplingInterval", { interval: 2000 }); await s.post("Profiler.start"); });
afterAll(async () => { const { profile } = await s.post("Profiler.stop"); const f = (expect.getState().testPath ?? "x").replace(/.*\/tests\//, "").replace(/\//g, "_"); writeFileSync(`/tmp/prof/${f}.cpuprofile`, JSON.stringify(profile)); s.disconnect(); });
