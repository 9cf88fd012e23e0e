import { diffLines } from "diff";
import { getJson } from "../api.ts";
import { ErrorLine, fmt, html, useLoaded } from "../ui.ts";

interface Spec {
  id: string;
  description: string;
  provenance: { direction: string; parent: string | null; hypothesis: string; proposer: string };
  [field: string]: unknown;
}
interface Pool {
  id: string;
  version: string;
  base: Spec;
  siblings: Spec[];
  owner?: string;
}
interface Counts {
  attempts: number;
  successes: number;
}
interface Profile {
  harnessId: string;
  policyVersion: number;
  turns: Counts;
  byFailureTag: Record<string, Counts>;
  behaviours: Record<string, Counts>;
}

/**
 * A spec's behaviour: everything but its name, its words about itself and its provenance (what a diff of two harnesses
 * should show).
 */
function behaviourOf(spec: Spec): string {
  const { id: _id, version: _v, description: _d, provenance: _p, ...rest } = spec;
  return `${JSON.stringify(rest, null, 2)}\n`;
}

/** The sibling's edit of H0 as a line diff of their behaviour. */
function Diff(props: { base: Spec; sibling: Spec }) {
  const parts = diffLines(behaviourOf(props.base), behaviourOf(props.sibling));
  const changed = parts.filter((p) => p.added || p.removed);
  return html`<pre class="diff" data-testid=${`diff-${props.sibling.id}`}>${
    changed.length === 0
      ? "(no change from H0)"
      : parts.map((p) =>
          p.added
            ? html`<span class="add">${p.value.replace(/^/gm, "+ ").trimEnd()}</span>`
            : p.removed
              ? html`<span class="del">${p.value.replace(/^/gm, "- ").trimEnd()}</span>`
              : null,
        )
  }</pre>`;
}

const rate = (c: Counts | undefined) =>
  c && c.attempts > 0 ? `${fmt(c.successes / c.attempts, 2)} of ${fmt(c.attempts, 1)}` : "–";

function ProfileLine(props: { profile: Profile | undefined }) {
  const p = props.profile;
  if (!p) return html`<p class="muted">No profile yet.</p>`;
  const tags = Object.entries(p.byFailureTag).slice(0, 6);
  return html`<p class="muted">Profile (policy v${p.policyVersion}): success ${rate(p.turns)}; by failure tag: ${tags.map(([t, c]) => `${t} ${rate(c)}`).join("; ") || "–"}</p>`;
}

function PoolDetail(props: { id: string }) {
  const pool = useLoaded(() => getJson<Pool>(`/v1/pools/${encodeURIComponent(props.id)}`), [props.id]);
  const profiles = useLoaded(
    () => getJson<{ profiles: Record<string, Profile> }>(`/v1/profiles?poolId=${encodeURIComponent(props.id)}`),
    [props.id],
  );
  const p = pool.value;
  return html`<section>
    <h2>Pool ${props.id}</h2>
    <${ErrorLine} error=${pool.error} />
    ${
      p &&
      html`<p class="muted">version ${p.version}; H0 is <b>${p.base.id}</b>; ${p.siblings.length} siblings${p.owner ? `; evolved for ${p.owner}` : ""}</p>
      ${p.siblings.map(
        (s) => html`<div class="sibling">
          <h3>${s.id} <span class="muted">direction <b data-testid="direction">${s.provenance.direction}</b>${s.provenance.parent ? `, from ${s.provenance.parent}` : ""}, by ${s.provenance.proposer}</span></h3>
          ${s.provenance.hypothesis && html`<p class="muted">${s.provenance.hypothesis}</p>`}
          <${Diff} base=${p.base} sibling=${s} />
          <${ProfileLine} profile=${profiles.value?.profiles[s.id]} />
        </div>`,
      )}`
    }
  </section>`;
}

/**
 * `#/pools[/id]`: the pools this key may route in; one pool's siblings, each as its edit of H0, its direction and
 * profile.
 */
export function PoolsPage(props: { id?: string }) {
  const list = useLoaded(
    () => getJson<{ pools: { id: string; version: string; siblings: number; owner?: string }[] }>("/v1/pools"),
    [],
  );
  return html`<div>
    <section>
      <h2>Pools</h2>
      <${ErrorLine} error=${list.error} />
      <table>
        <thead><tr><th>id</th><th>version</th><th>siblings</th><th>owner</th></tr></thead>
        <tbody>
          ${(list.value?.pools ?? []).map((p) => html`<tr><td><a href=${`#/pools/${p.id}`}>${p.id}</a></td><td>${p.version}</td><td>${p.siblings}</td><td>${p.owner ?? "shared"}</td></tr>`)}
        </tbody>
      </table>
    </section>
    ${props.id && html`<${PoolDetail} id=${props.id} />`}
  </div>`;
}
