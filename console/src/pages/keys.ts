import { useState } from "preact/hooks";
import { describeError, getJson, postJson, sendJson } from "../api.ts";
import { ErrorLine, html, useLoaded } from "../ui.ts";

interface KeyView {
  id: string;
  label?: string;
  scopes: string[];
  status: string;
  createdAt: string;
  createdBy?: string;
  budgetUsd?: number;
  requestQuota?: number;
  rate?: { perSecond: number; burst: number };
  expiresAt?: string;
}

/** A limit field as typed: empty removes the limit (null), else its number. */
const limit = (text: string): number | null => (text.trim() === "" ? null : Number(text));

/** The limits a key's row edits: a USD budget, a request quota and a rate (per second, burst); empty: none. */
function LimitsEditor(props: { k: KeyView; onDone: (message: string) => void; onError: (e: string) => void }) {
  const { k } = props;
  const [budget, setBudget] = useState(k.budgetUsd === undefined ? "" : String(k.budgetUsd));
  const [quota, setQuota] = useState(k.requestQuota === undefined ? "" : String(k.requestQuota));
  const [rate, setRate] = useState(k.rate ? `${k.rate.perSecond}/${k.rate.burst}` : "");
  const save = async () => {
    try {
      const [perSecond, burst] = rate.split("/").map((x) => Number(x.trim()));
      const body = {
        budgetUsd: limit(budget),
        requestQuota: limit(quota),
        rate: rate.trim() === "" ? null : { perSecond, burst },
      };
      await sendJson("PATCH", `/v1/keys/${encodeURIComponent(k.id)}`, body);
      props.onDone(`${k.id}: limits saved`);
    } catch (err) {
      props.onError(describeError(err));
    }
  };
  const input = (name: string, value: string, set: (v: string) => void, placeholder: string) =>
    html`<input name=${`${name}-${k.id}`} size="8" placeholder=${placeholder} value=${value} onInput=${(e: Event) => set((e.target as HTMLInputElement).value)} />`;
  return html`<span class="limits">
    ${input("budgetUsd", budget, setBudget, "USD")} ${input("requestQuota", quota, setQuota, "requests")}
    ${input("rate", rate, setRate, "per s/burst")}
    <button class="plain" name=${`save-limits-${k.id}`} onClick=${save}>Save limits</button>
  </span>`;
}
const SCOPES = [
  "route",
  "gateway",
  "rescues",
  "experiments",
  "pools:read",
  "pools:write",
  "profiles:read",
  "profiles:write",
  "admin",
];

/** One key's row: what it is, its limits, and for an active key the admin's actions. */
function KeyRow(props: {
  k: KeyView;
  rotate: (k: KeyView) => void;
  revoke: (k: KeyView) => void;
  onDone: (message: string) => void;
  onError: (e: string) => void;
}) {
  const { k } = props;
  const limits = `${k.budgetUsd === undefined ? "no budget" : `$${k.budgetUsd.toFixed(2)}`}; ${k.requestQuota === undefined ? "no quota" : `${k.requestQuota} requests`}; ${k.rate ? `${k.rate.perSecond}/s, burst ${k.rate.burst}` : "default rate"}`;
  return html`<tr data-key=${k.id}><td>${k.id}</td><td>${k.label ?? ""}</td><td>${k.scopes.join(", ")}</td><td>${k.status}</td>
    <td>${limits}</td><td>${k.createdAt}</td><td>${k.createdBy ?? ""}</td>
    <td>${
      k.status === "active"
        ? html`<button class="plain" name=${`rotate-${k.id}`} onClick=${() => props.rotate(k)}>Rotate</button>
          <button class="plain" name=${`revoke-${k.id}`} onClick=${() => props.revoke(k)}>Revoke</button>
          <${LimitsEditor} k=${k} onDone=${props.onDone} onError=${props.onError} />`
        : null
    }</td></tr>`;
}

/**
 * `#/keys` (admin keys): every key with its limits, and what an admin does to one: issue (its secret shown once on this
 * page and kept nowhere), rotate (the new secret likewise), revoke (after a confirmation), change its limits.
 */
export function KeysPage() {
  const keys = useLoaded(() => getJson<{ keys: KeyView[] }>("/v1/keys"), []);
  const [label, setLabel] = useState("");
  const [scopes, setScopes] = useState<string[]>(["experiments"]);
  const [created, setCreated] = useState<{ id: string; secret: string } | undefined>();
  const [error, setError] = useState<string | undefined>();
  const create = async () => {
    setError(undefined);
    try {
      const made = await postJson<{ key: KeyView; secret: string }>("/v1/keys", {
        scopes,
        ...(label ? { label } : {}),
      });
      setCreated({ id: made.key.id, secret: made.secret });
      keys.reload();
    } catch (err) {
      setError(describeError(err));
    }
  };
  const toggle = (s: string) => setScopes(scopes.includes(s) ? scopes.filter((x) => x !== s) : [...scopes, s]);
  const [done, setDone] = useState<string | undefined>();
  const act = async (what: string, run: () => Promise<unknown>) => {
    setError(undefined);
    try {
      await run();
      setDone(what);
      keys.reload();
    } catch (err) {
      setError(describeError(err));
    }
  };
  const revoke = (k: KeyView) => {
    if (!window.confirm(`Revoke ${k.id}? Every request with it is refused from then on.`)) return;
    void act(`${k.id} revoked`, () => sendJson("DELETE", `/v1/keys/${encodeURIComponent(k.id)}`));
  };
  const rotate = (k: KeyView) =>
    void act(`${k.id} rotated: its old secret works for the grace period, then is refused`, async () => {
      const made = await sendJson<{ key: KeyView; secret: string }>(
        "POST",
        `/v1/keys/${encodeURIComponent(k.id)}/rotate`,
        {},
      );
      setCreated({ id: made.key.id, secret: made.secret });
    });
  return html`<div>
    <section>
      <h2>Issue a key</h2>
      <label>label <input name="label" value=${label} onInput=${(e: Event) => setLabel((e.target as HTMLInputElement).value)} /></label>
      <div>${SCOPES.map((s) => html`<label><input type="checkbox" name=${`scope-${s}`} checked=${scopes.includes(s)} onChange=${() => toggle(s)} /> ${s}</label>`)}</div>
      <button onClick=${create}>Create key</button>
      ${
        created &&
        html`<p data-testid="created">Key <b>${created.id}</b>: its secret, shown this once (store it now): <span class="secret" data-testid="secret">${created.secret}</span>
          <button class="plain" onClick=${() => setCreated(undefined)}>Hide</button></p>`
      }
      <${ErrorLine} error=${error} />
    </section>
    <section>
      <h2>Keys</h2>
      <${ErrorLine} error=${keys.error} />
      ${done && html`<p data-testid="key-action">${done}</p>`}
      <table data-testid="keys">
        <thead><tr><th>id</th><th>label</th><th>scopes</th><th>status</th><th>limits</th><th>created</th><th>by</th><th></th></tr></thead>
        <tbody>
          ${(keys.value?.keys ?? []).map(
            (k) =>
              html`<${KeyRow} k=${k} rotate=${rotate} revoke=${revoke} onDone=${(m: string) => {
                setDone(m);
                keys.reload();
              }} onError=${setError} />`,
          )}
        </tbody>
      </table>
    </section>
  </div>`;
}
