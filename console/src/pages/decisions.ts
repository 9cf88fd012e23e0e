import { useState } from "preact/hooks";
import { describeError, getJson, opened, postJson } from "../api.ts";
import { go } from "../route.ts";
import { ErrorLine, fmt, html, useLoaded } from "../ui.ts";

interface Decision {
  id: string;
  task: { id: string; family: string; tags: string[] };
  failureTags: string[];
  chosen: string[];
  ranked: { harnessId: string; score: number; firstPlaces: number }[];
  ballots: { voterId: string; ranking: string[]; rationale?: string; costUsd?: number }[];
  failures: { voterId: string; reason: string; kind?: string }[];
  fellBack?: boolean;
}

function DecisionDetail(props: { id: string }) {
  const d = useLoaded(() => getJson<Decision>(`/v1/decisions/${encodeURIComponent(props.id)}`), [props.id]);
  const v = d.value;
  return html`<section>
    <h2>Decision ${props.id}</h2>
    <${ErrorLine} error=${d.error} />
    ${
      v &&
      html`<p>Task ${v.task.id} (${v.task.family}; ${v.task.tags.join(", ")}), failed with ${v.failureTags.join(", ") || "–"}</p>
      <p>Chosen Top-${v.chosen.length}: <b data-testid="chosen">${v.chosen.join(", ")}</b>${v.fellBack ? " (the statistical voters decided: too few panel voters answered)" : ""}</p>
      <h3>Ranking</h3>
      <table><thead><tr><th>harness</th><th>score</th><th>first places</th></tr></thead>
        <tbody>${v.ranked.map((r) => html`<tr><td>${r.harnessId}</td><td>${fmt(r.score)}</td><td>${r.firstPlaces}</td></tr>`)}</tbody></table>
      <h3>Ballots</h3>
      <table><thead><tr><th>voter</th><th>ranking</th><th>rationale</th><th>cost</th></tr></thead>
        <tbody>
          ${v.ballots.map((b) => html`<tr><td>${b.voterId}</td><td>${b.ranking.join(" > ")}</td><td>${b.rationale ?? ""}</td><td>${b.costUsd !== undefined ? `$${fmt(b.costUsd, 5)}` : ""}</td></tr>`)}
          ${v.failures.map((f) => html`<tr class="error"><td>${f.voterId}</td><td>abstained (${f.kind ?? "error"})</td><td>${f.reason}</td><td></td></tr>`)}
        </tbody></table>`
    }
  </section>`;
}

const EXAMPLE =
  '{"poolId":"embedded","task":{"id":"app-1","family":"app","tags":["app","bulk"]},"failureTags":["incomplete-results"],"k":2}';

/**
 * `#/decisions[/id]`: route a failed task (POST /v1/route) or open a recorded decision: its ballots and chosen Top-k.
 */
export function DecisionsPage(props: { id?: string }) {
  const [body, setBody] = useState(EXAMPLE);
  const [openId, setOpenId] = useState("");
  const [error, setError] = useState<string | undefined>();
  const open = (id: string) => {
    opened.add("decisions", id);
    go(`/decisions/${id}`);
  };
  const route = async () => {
    setError(undefined);
    try {
      open((await postJson<Decision>("/v1/route", JSON.parse(body))).id);
    } catch (err) {
      setError(describeError(err));
    }
  };
  return html`<div>
    ${props.id && html`<${DecisionDetail} id=${props.id} />`}
    <section>
      <h2>Route a failed task</h2>
      <textarea name="route-request" rows="3" value=${body} onInput=${(e: Event) => setBody((e.target as HTMLTextAreaElement).value)}></textarea>
      <button onClick=${route}>Route</button>
      <${ErrorLine} error=${error} />
      <h3>Decisions in this tab</h3>
      <ul>${opened.list("decisions").map((id) => html`<li><a href=${`#/decisions/${id}`}>${id}</a></li>`)}</ul>
      <input name="open-decision" placeholder="dec_…" value=${openId} onInput=${(e: Event) => setOpenId((e.target as HTMLInputElement).value.trim())} />
      <button class="plain" onClick=${() => openId && open(openId)}>Open</button>
    </section>
  </div>`;
}
