import { useState } from "preact/hooks";
import { describeError, getJson, postJson } from "../api.ts";
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

/**
 * `#/keys` (admin keys): every key, and a form that issues one; its secret is shown once on this page and kept nowhere.
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
      <table data-testid="keys">
        <thead><tr><th>id</th><th>label</th><th>scopes</th><th>status</th><th>created</th><th>by</th></tr></thead>
        <tbody>
          ${(keys.value?.keys ?? []).map((k) => html`<tr><td>${k.id}</td><td>${k.label ?? ""}</td><td>${k.scopes.join(", ")}</td><td>${k.status}</td><td>${k.createdAt}</td><td>${k.createdBy ?? ""}</td></tr>`)}
        </tbody>
      </table>
    </section>
  </div>`;
}
