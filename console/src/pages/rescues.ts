import { useRef, useState } from "preact/hooks";
import { describeError, getJson, postJson } from "../api.ts";
import { KeyList } from "../key-list.ts";
import { go } from "../route.ts";
import { ErrorLine, fmt, html, useLoaded } from "../ui.ts";

interface RescueStatus {
  job: { id: string; poolId: string; taskId: string; chosen: string[]; expected: number };
  status: string;
  completed: number;
  failed: { index: number; code: string; reason: string }[];
  rescued: boolean;
  rollouts: {
    index: number;
    harnessId: string;
    reward: number;
    success: boolean;
    failureTags: string[];
    steps: number;
  }[];
}
interface Trajectory {
  index: number;
  harness_id: string;
  decision_id: string;
  weight_version: number;
  reward: number;
  success: boolean;
  finish_reason: string;
  failure_tags: string[];
  completion_ids: number[];
  segmented: boolean;
}

/** A caller rescue's request to fill in (POST /v1/rescues): the fields every rescue names, with placeholders. */
const RESCUE_TEMPLATE = JSON.stringify(
  {
    poolId: "embedded",
    failureTags: ["incomplete-results"],
    k: 2,
    rolloutsPerHarness: 2,
    caller: {
      endpoint: "<your policy endpoint's id>",
      environment: { kind: "openenv", url: "<your OpenEnv server's URL>" },
      task: { id: "<task id>", family: "app", tools: [{ name: "search" }, { name: "submit", submit: true }] },
    },
  },
  null,
  2,
);

/** The request the form holds, or why it is not one (never a raw parser exception). */
function parsedRequest(body: string): { request: unknown } | { error: string } {
  try {
    return { request: JSON.parse(body) };
  } catch (err) {
    return { error: `the request is not JSON (${(err as Error).message}): fix it, or start again from the template` };
  }
}

function StartRescue() {
  const [body, setBody] = useState(RESCUE_TEMPLATE);
  const [error, setError] = useState<string | undefined>();
  const start = async () => {
    setError(undefined);
    const parsed = parsedRequest(body);
    if ("error" in parsed) return setError(parsed.error);
    try {
      const started = await postJson<{ id: string }>("/v1/rescues", parsed.request);
      go(`/rescues/${started.id}`);
    } catch (err) {
      setError(describeError(err));
    }
  };
  return html`<section>
    <h2>Start a rescue</h2>
    <p class="muted">The request as POST /v1/rescues takes it (poolId, failureTags or harnesses, caller: your endpoint, environment and task).</p>
    <textarea name="rescue-request" rows="14" value=${body} onInput=${(e: Event) => setBody((e.target as HTMLTextAreaElement).value)}></textarea>
    <button onClick=${start}>Start rescue</button> <button class="plain" onClick=${() => setBody(RESCUE_TEMPLATE)}>Template</button>
    <${ErrorLine} error=${error} />
  </section>`;
}

function Trajectories(props: { id: string }) {
  const page = useLoaded(
    () => getJson<{ trajectories: Trajectory[] }>(`/v1/rescues/${props.id}/trajectories?limit=64`),
    [props.id],
  );
  if (page.error) return html`<p class="muted">No token rows: ${page.error}</p>`;
  return html`<table data-testid="trajectories">
    <thead><tr><th>index</th><th>harness</th><th>reward</th><th>success</th><th>finish</th><th>failure tags</th><th>tokens</th><th>weights</th><th>decision</th></tr></thead>
    <tbody>
      ${(page.value?.trajectories ?? []).map(
        (t) => html`<tr>
          <td>${t.index}</td><td>${t.harness_id}</td><td>${fmt(t.reward)}</td><td>${t.success ? "yes" : "no"}</td><td>${t.finish_reason}</td>
          <td>${t.failure_tags.join(", ")}</td><td>${t.completion_ids.length}${t.segmented ? " (segmented)" : ""}</td><td>v${t.weight_version}</td>
          <td><a href=${`#/decisions/${t.decision_id}`}>${t.decision_id}</a></td>
        </tr>`,
      )}
    </tbody>
  </table>`;
}

/**
 * `#/rescues/{id}`: its slots as they finish (long-polled: `?wait=&seen=`), its chosen harnesses, its trajectories'
 * outcomes.
 */
function RescueDetail(props: { id: string }) {
  const seen = useRef(0);
  const status = useLoaded(
    async () => {
      const s = await getJson<RescueStatus>(
        `/v1/rescues/${encodeURIComponent(props.id)}${seen.current > 0 ? `?wait=10&seen=${seen.current}` : ""}`,
      );
      seen.current = s.completed + s.failed.length;
      return s;
    },
    [props.id],
    { everyMs: 100, again: (s) => s.status === "running" },
  );
  const s = status.value;
  return html`<div>
    <section>
      <h2>Rescue ${props.id}</h2>
      <${ErrorLine} error=${status.error} />
      ${
        s &&
        html`<p>Status: <b data-testid="status">${s.status}</b>; slots finished <b data-testid="finished">${s.completed + s.failed.length}</b> of ${s.job.expected}
          ${" "}(${s.completed} stored, ${s.failed.length} given up); ${s.rescued ? "rescued" : "not rescued"}</p>
        <p>Pool ${s.job.poolId}, task ${s.job.taskId}; chosen harnesses: <b data-testid="chosen">${s.job.chosen.join(", ")}</b></p>
        <table data-testid="slots">
          <thead><tr><th>slot</th><th>harness</th><th>reward</th><th>success</th><th>steps</th><th>failure tags / why</th></tr></thead>
          <tbody>
            ${s.rollouts.map((r) => html`<tr><td>${r.index}</td><td>${r.harnessId}</td><td>${fmt(r.reward)}</td><td>${r.success ? "yes" : "no"}</td><td>${r.steps}</td><td>${r.failureTags.join(", ")}</td></tr>`)}
            ${s.failed.map((f) => html`<tr class="error"><td>${f.index}</td><td>–</td><td>–</td><td>given up</td><td>–</td><td>${f.code}: ${f.reason}</td></tr>`)}
          </tbody>
        </table>`
      }
    </section>
    ${s && s.status !== "running" && html`<section><h2>Trajectories</h2><${Trajectories} id=${props.id} /></section>`}
  </div>`;
}

/** One rescue in the key's list (`GET /v1/rescues`). */
interface Item {
  id: string;
  status: string;
  createdAt: number;
  poolId: string;
  taskId: string;
  chosen: number;
  expected: number;
  completed: number;
  failed: number;
}

const row = (r: Item) => html`<tr key=${r.id}>
  <td><a href=${`#/rescues/${r.id}`}>${r.id}</a></td>
  <td>${r.status}</td>
  <td>${r.poolId}</td>
  <td>${r.taskId}</td>
  <td>${r.chosen}</td>
  <td>${r.completed + r.failed}/${r.expected}${r.failed ? ` (${r.failed} given up)` : ""}</td>
  <td>${new Date(r.createdAt).toISOString().replace("T", " ").slice(0, 19)}</td>
</tr>`;

/** `#/rescues[/id]`: the key's rescues (newest first, from the API), a form to start one, and one rescue. */
export function RescuesPage(props: { id?: string }) {
  const [openId, setOpenId] = useState("");
  if (props.id) return html`<${RescueDetail} id=${props.id} />`;
  const open = (id: string) => go(`/rescues/${id}`);
  return html`<div>
    <${StartRescue} />
    <section>
      <h2>Rescues of this key</h2>
      <${KeyList} path="/v1/rescues" name="rescue-list" head=${["id", "status", "pool", "task", "harnesses", "slots finished", "started (UTC)"]} row=${row} empty="No rescues yet." />
      <input name="open-rescue" placeholder="rescue id" value=${openId} onInput=${(e: Event) => setOpenId((e.target as HTMLInputElement).value.trim())} />
      <button class="plain" onClick=${() => openId && open(openId)}>Open</button>
    </section>
  </div>`;
}
