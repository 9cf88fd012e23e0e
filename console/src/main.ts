import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { currentKey, describeError, forgetKey, getJson, rememberKey } from "./api.ts";
import { useRoute } from "./route.ts";
import { html } from "./ui.ts";
import { DecisionsPage } from "./pages/decisions.ts";
import { ExperimentsPage } from "./pages/experiments.ts";
import { KeysPage } from "./pages/keys.ts";
import { PoolsPage } from "./pages/pools.ts";
import { RescuesPage } from "./pages/rescues.ts";
import { UsagePage } from "./pages/usage.ts";

interface Me {
  id: string;
  label?: string;
  scopes: string[];
}
type Page = (props: { id?: string }) => unknown;

/** The console's pages by the fragment's first part; `admin` ones are shown to admin keys only. */
const PAGES: Record<string, { title: string; page: Page; admin?: boolean }> = {
  experiments: { title: "Experiments", page: ExperimentsPage },
  rescues: { title: "Rescues", page: RescuesPage },
  pools: { title: "Pools", page: PoolsPage },
  decisions: { title: "Decisions", page: DecisionsPage },
  usage: { title: "Usage", page: UsagePage },
  keys: { title: "Keys", page: KeysPage, admin: true },
};

/**
 * Who the tab's key is: its id (`GET /v1/usage` names it), then its scopes (`GET /v1/keys/{id}`: any key may read
 * itself).
 */
async function whoAmI(): Promise<Me> {
  const { keyId } = await getJson<{ keyId: string }>("/v1/usage");
  return getJson<Me>(`/v1/keys/${encodeURIComponent(keyId)}`);
}

function SignIn(props: { onSignedIn: (me: Me) => void }) {
  const [secret, setSecret] = useState("");
  const [error, setError] = useState<string | undefined>();
  const submit = async (e: Event) => {
    e.preventDefault();
    rememberKey(secret.trim());
    setSecret("");
    try {
      props.onSignedIn(await whoAmI());
    } catch (err) {
      forgetKey();
      setError(describeError(err));
    }
  };
  return html`<section class="signin">
    <h2>Harness-S console</h2>
    <form onSubmit=${submit}>
      <label for="key">API key</label>
      <input id="key" name="key" type="password" autocomplete="off" value=${secret} onInput=${(e: Event) => setSecret((e.target as HTMLInputElement).value)} />
      <button type="submit">Sign in</button>
    </form>
    <p class="muted">The key stays in this tab (sessionStorage) and goes to this API only, in the Authorization header.</p>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </section>`;
}

function App() {
  const [me, setMe] = useState<Me | undefined>();
  const [checking, setChecking] = useState(currentKey() !== null);
  const [name, id] = useRoute();
  useEffect(() => {
    if (!currentKey()) return;
    whoAmI()
      .then(setMe, () => forgetKey())
      .finally(() => setChecking(false));
  }, []);
  if (checking) return html`<p class="muted">…</p>`;
  if (!me) return html`<${SignIn} onSignedIn=${setMe} />`;
  const admin = me.scopes.includes("admin");
  const shown = Object.entries(PAGES).filter(([, p]) => admin || !p.admin);
  const [current, page] = shown.find(([n]) => n === name) ?? shown[0]!;
  // An admin page asked for by a key that is not one is said so, not left for another page silently.
  const refused = !admin && PAGES[name ?? ""]?.admin ? PAGES[name!]!.title : undefined;
  const signOut = () => {
    forgetKey();
    setMe(undefined);
  };
  return html`<div>
    <header>
      <strong>Harness-S</strong>
      <nav>${shown.map(([n, p]) => html`<a class=${n === current ? "on" : ""} href=${`#/${n}`}>${p.title}</a>`)}</nav>
      <span class="who">signed in as <b data-testid="me">${me.id}</b> (${me.scopes.join(", ")}) <button class="plain" onClick=${signOut}>Sign out</button></span>
    </header>
    <main>${
      refused
        ? html`<p class="error" role="alert" data-testid="not-allowed">${refused} is for admin keys: this key (${me.scopes.join(", ")}) cannot open it.</p>`
        : html`<${page.page} key=${`${current}/${id ?? ""}`} id=${n(id)} />`
    }</main>
  </div>`;
}

const n = (id: string | undefined) => (id === undefined || id === "" ? undefined : id);

render(html`<${App} />`, document.getElementById("app")!);
