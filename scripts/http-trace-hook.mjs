// Preloaded with `node --import ./scripts/http-trace-hook.mjs` (worker threads inherit it): every
// HTTP request this process sends or serves, in every thread, is appended to $HTTP_TRACE_FILE as
// one tab-separated line (thread, start ms, end ms, method, path, X-Amz-Target), wall-clock ms
// (performance.timeOrigin + now). scripts/rescue-trace.ts reads it; nothing is written without the variable.
import dc from "node:diagnostics_channel";
import { appendFileSync } from "node:fs";
import { threadId } from "node:worker_threads";

const file = process.env.HTTP_TRACE_FILE;
const now = () => performance.timeOrigin + performance.now();
const started = new WeakMap();
const line = (s, method, path, target) =>
  `${threadId}\t${s.toFixed(1)}\t${now().toFixed(1)}\t${method}\t${path.slice(0, 80)}\t${target}\n`;
if (file) {
  dc.subscribe("http.client.request.start", ({ request }) => started.set(request, now()));
  dc.subscribe("http.client.response.finish", ({ request }) => {
    const s = started.get(request);
    if (s !== undefined)
      appendFileSync(file, line(s, request.method, request.path, String(request.getHeader("x-amz-target") ?? "")));
  });
  dc.subscribe("http.server.request.start", ({ request }) => started.set(request, now()));
  dc.subscribe("http.server.response.finish", ({ request }) => {
    const s = started.get(request);
    if (s !== undefined) appendFileSync(file, line(s, `served ${request.method}`, request.url, ""));
  });
}
