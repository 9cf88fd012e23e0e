import { useState } from "preact/hooks";
import { parseSeedList } from "@harness-s/core/seeds";
import { describeError, getJson, postJson } from "../api.ts";
import { KeyList } from "../key-list.ts";
import { ErrorLine, fmt, html, useLoaded } from "../ui.ts";
import { go } from "../route.ts";
import { ExperimentDetail } from "./experiment-detail.ts";

const ARMS = ["grpo", "grpo-budget", "harness-s", "harness-s-random", "harness-s-noreanchor", "harness-s-single-voter"];
/** The environment value that means the caller's own OpenEnv server. */
const OWN_ENV = "openenv";
interface Quote {
  rollouts: number;
  chargeUsd: number;
  costOfGoods: { totalUsd: number };
  caps?: { note: string };
  paths?: { name: string; rollouts: number; chargeUsd: number }[];
  note?: string;
}
/** What this deployment offers an experiment (`GET /v1/models`). */
interface Offers {
  models: { name: string }[];
  environments: string[];
  callerEnvironments: boolean;
}
/** The form's fields, as the experiment request they make. */
export interface Plan {
  env: string;
  model: string;
  /** The caller's OpenEnv server: its URL, its tasks (JSON, each with its split) and the pool it names, if any. */
  url: string;
  tasks: string;
  poolId: string;
  arms: string[];
  /** In the CLI's syntax: `1,2,3`, `1-5` or both. */
  seeds: string;
  steps: number;
  batchSize: number;
  evalSamples: number;
  evalTasks: number;
  budget: number;
  /** A cap on the charge in USD; empty: none. */
  budgetUsd: string;
}
export const DEFAULT_PLAN: Plan = {
  env: "embedded",
  model: "",
  url: "",
  tasks: "",
  poolId: "",
  arms: ["grpo", "harness-s"],
  seeds: "3",
  steps: 1,
  batchSize: 4,
  evalSamples: 3,
  evalTasks: 4,
  budget: 400,
  budgetUsd: "",
};

/** The caller's environment the form's fields give (its tasks' JSON parsed here, checked by the API). */
function ownEnvironment(p: Plan) {
  let tasks: unknown;
  try {
    tasks = JSON.parse(p.tasks);
  } catch (err) {
    throw new Error(`tasks: not JSON (${(err as Error).message}); paste an array of tasks, each with its split`);
  }
  return { kind: "openenv", url: p.url, tasks, ...(p.poolId ? { poolId: p.poolId } : {}) };
}

/**
 * The experiment request the form's fields make; a field this page can tell is wrong (seeds not in the CLI's syntax,
 * tasks not JSON, a USD budget not a number) throws its message. The API checks every bound.
 */
export function requestOf(p: Plan) {
  const usd = p.budgetUsd.trim() === "" ? undefined : Number(p.budgetUsd);
  if (usd !== undefined && !(usd > 0))
    throw new Error(`budget (USD): ${JSON.stringify(p.budgetUsd)} is not an amount above 0`);
  return {
    env: p.env === OWN_ENV ? ownEnvironment(p) : p.env,
    ...(p.model ? { model: p.model } : {}),
    arms: p.arms,
    seeds: parseSeedList(p.seeds),
    train: {
      steps: p.steps,
      batchSize: p.batchSize,
      curveEvery: 1,
      curveTasks: 4,
      auditEvery: 2,
      reanchorEvery: 1,
      reanchorBudget: 6,
    },
    evalSamples: p.evalSamples,
    evalTasks: p.evalTasks,
    budget: { rollouts: p.budget, ...(usd !== undefined ? { usd } : {}) },
  };
}

/** Why a quoted run may not start here (above what is left of the key's budget, or of its own USD cap), if it may not. */
export function whyNotStart(q: Quote, leftUsd: number | null | undefined, capUsd: string): string | undefined {
  if (leftUsd !== null && leftUsd !== undefined && q.chargeUsd > leftUsd)
    return `its quote ($${fmt(q.chargeUsd, 4)}) is above the $${fmt(leftUsd, 4)} left of this key's budget`;
  const cap = Number(capUsd);
  if (capUsd.trim() !== "" && q.chargeUsd > cap)
    return `its quote ($${fmt(q.chargeUsd, 4)}) is above its own budget of $${capUsd}`;
  return undefined;
}

/** A caller task as the form's template shows it: one per split, each with its tools. */
const TASKS_TEMPLATE = JSON.stringify(
  ["train", "dev", "held-out"].map((split, i) => ({
    id: `task-${i + 1}`,
    family: "my-env",
    split,
    instruction: "what the agent is asked to do",
    tools: [
      { name: "search", description: "look something up", parameters: { type: "object" } },
      { name: "submit", description: "commit the answer", parameters: { type: "object" }, submit: true },
    ],
  })),
  null,
  1,
);

function StartForm(props: { onStarted: (id: string) => void }) {
  const [plan, setPlan] = useState<Plan>(DEFAULT_PLAN);
  const [quote, setQuote] = useState<Quote | undefined>();
  const [error, setError] = useState<string | undefined>();
  const offers = useLoaded(() => getJson<Offers>("/v1/models"), []);
  const usage = useLoaded(() => getJson<{ leftUsd: number | null; budgetUsd: number | null }>("/v1/usage"), [quote]);
  const set = (patch: Partial<Plan>) => {
    setPlan({ ...plan, ...patch });
    setQuote(undefined);
  };
  const num = (field: keyof Plan) => (e: Event) => set({ [field]: Number((e.target as HTMLInputElement).value) });
  const text = (field: keyof Plan) => (e: Event) => set({ [field]: (e.target as HTMLInputElement).value });
  const ask = async () => {
    setError(undefined);
    try {
      setQuote(await postJson<Quote>("/v1/quotes", { experiment: requestOf(plan) }));
    } catch (err) {
      setError(describeError(err));
    }
  };
  const start = async () => {
    try {
      const started = await postJson<{ id: string }>("/v1/experiments", requestOf(plan));
      props.onStarted(started.id);
    } catch (err) {
      setError(describeError(err));
    }
  };
  const toggle = (arm: string) =>
    set({ arms: plan.arms.includes(arm) ? plan.arms.filter((a) => a !== arm) : [...plan.arms, arm] });
  const o = offers.value;
  const envs = [...(o?.environments ?? ["embedded"]), ...(o?.callerEnvironments ? [OWN_ENV] : [])];
  const refused = quote && whyNotStart(quote, usage.value?.leftUsd, plan.budgetUsd);
  return html`<section>
    <h2>Start an experiment</h2>
    <label>environment <select name="env" value=${plan.env} onChange=${text("env")}>
      ${envs.map((e) => html`<option value=${e}>${e === OWN_ENV ? "your own OpenEnv server" : e}</option>`)}
    </select></label>
    <label>model <select name="model" value=${plan.model} onChange=${text("model")}>
      <option value="">${plan.env === "embedded" ? "the embedded suite's own policy" : "the deployment's first"}</option>
      ${(o?.models ?? []).map((m) => html`<option value=${m.name}>${m.name}</option>`)}
    </select></label>
    ${
      plan.env === OWN_ENV &&
      html`<div class="own-env">
        <label>server URL <input name="url" placeholder="https://env.example.com" value=${plan.url} onInput=${text("url")} /></label>
        <label>pool (optional: evolved first when empty) <input name="poolId" placeholder="pev_…" value=${plan.poolId} onInput=${text("poolId")} /></label>
        <label>tasks (JSON, each with its split: train, dev, held-out)
          <textarea name="tasks" rows="8" cols="80" onInput=${text("tasks")}>${plan.tasks}</textarea></label>
        <button class="plain" onClick=${() => set({ tasks: TASKS_TEMPLATE })}>Use the template</button>
      </div>`
    }
    <div>${ARMS.map((a) => html`<label><input type="checkbox" name=${`arm-${a}`} checked=${plan.arms.includes(a)} onChange=${() => toggle(a)} /> ${a}</label>`)}</div>
    <label>seeds (e.g. 1,2,3 or 1-5) <input name="seeds" value=${plan.seeds} onInput=${text("seeds")} /></label>
    <label>training steps <input type="number" name="steps" min="1" value=${plan.steps} onInput=${num("steps")} /></label>
    <label>batch size <input type="number" name="batchSize" min="1" value=${plan.batchSize} onInput=${num("batchSize")} /></label>
    <label>eval samples <input type="number" name="evalSamples" min="3" value=${plan.evalSamples} onInput=${num("evalSamples")} /></label>
    <label>eval tasks <input type="number" name="evalTasks" min="1" value=${plan.evalTasks} onInput=${num("evalTasks")} /></label>
    <label>budget (rollouts) <input type="number" name="budget" min="1" value=${plan.budget} onInput=${num("budget")} /></label>
    <label>budget (USD, optional) <input name="budgetUsd" placeholder="none" value=${plan.budgetUsd} onInput=${text("budgetUsd")} /></label>
    <div><button onClick=${ask}>Get a quote</button></div>
    ${
      quote &&
      html`<div class="quote" data-testid="quote">
        <p>Quote: <b>${quote.rollouts}</b> rollouts, charge <b>$${fmt(quote.chargeUsd, 4)}</b> (cost of goods $${fmt(quote.costOfGoods.totalUsd, 4)})</p>
        <p data-testid="left">${usage.value?.leftUsd === null || usage.value === undefined ? "this key has no USD budget" : `$${fmt(usage.value.leftUsd, 4)} left of this key's budget of $${fmt(usage.value.budgetUsd ?? 0, 2)}`}</p>
        ${(quote.paths ?? []).map((p) => html`<p class="muted" data-testid="quote-path">if ${p.name}: ${p.rollouts} rollouts, $${fmt(p.chargeUsd, 4)}</p>`)}
        ${quote.caps && html`<p class="muted">${quote.caps.note}</p>`}
        ${quote.note && html`<p class="muted">${quote.note}</p>`}
        ${refused ? html`<p class="error" role="alert" data-testid="refused">Not started: ${refused}.</p>` : null}
        <button onClick=${start} disabled=${refused !== undefined}>Start experiment</button>
      </div>`
    }
    <${ErrorLine} error=${error ?? offers.error} />
  </section>`;
}

/** One run in the key's list (`GET /v1/experiments`). */
interface Item {
  id: string;
  status: string;
  createdAt: number;
  env: string;
  arms: number;
  seeds: number;
  progress: { done: number; total: number };
}

const row = (r: Item) => html`<tr key=${r.id}>
  <td><a href=${`#/experiments/${r.id}`}>${r.id}</a></td>
  <td>${r.status}</td>
  <td>${r.env}</td>
  <td>${r.arms} × ${r.seeds}</td>
  <td>${r.progress.done}/${r.progress.total}</td>
  <td>${new Date(r.createdAt).toISOString().replace("T", " ").slice(0, 19)}</td>
</tr>`;

/**
 * `#/experiments[/id]`: the key's runs (newest first, from the API), the form that starts one after its quote, and one
 * run.
 */
export function ExperimentsPage(props: { id?: string }) {
  const [openId, setOpenId] = useState("");
  if (props.id) return html`<${ExperimentDetail} id=${props.id} />`;
  const open = (id: string) => go(`/experiments/${id}`);
  return html`<div>
    <${StartForm} onStarted=${open} />
    <section>
      <h2>Experiments of this key</h2>
      <p class="muted">The runs this key started, newest first (the API lists a key only its own runs).</p>
      <${KeyList} path="/v1/experiments" name="experiment-list" head=${["id", "status", "env", "arms × seeds", "progress", "started (UTC)"]} row=${row} empty="No experiments yet." />
      <p>
        <input name="open-experiment" placeholder="exp_…" value=${openId} onInput=${(e: Event) => setOpenId((e.target as HTMLInputElement).value.trim())} />
        <button class="plain" onClick=${() => openId && open(openId)}>Open</button>
      </p>
    </section>
  </div>`;
}
