import { useState } from "preact/hooks";
import { postJson, describeError } from "../api.ts";
import { KeyList } from "../key-list.ts";
import { ErrorLine, fmt, html } from "../ui.ts";
import { go } from "../route.ts";
import { ExperimentDetail } from "./experiment-detail.ts";

const ARMS = ["grpo", "grpo-budget", "harness-s", "harness-s-random", "harness-s-noreanchor", "harness-s-single-voter"];
interface Quote {
  rollouts: number;
  chargeUsd: number;
  costOfGoods: { totalUsd: number };
  basis: unknown;
}
/** The form's fields, as the experiment request they make. */
interface Plan {
  arms: string[];
  seeds: string;
  steps: number;
  batchSize: number;
  evalSamples: number;
  evalTasks: number;
  budget: number;
}
const DEFAULT_PLAN: Plan = {
  arms: ["grpo", "harness-s"],
  seeds: "3",
  steps: 1,
  batchSize: 4,
  evalSamples: 3,
  evalTasks: 4,
  budget: 400,
};

/** The experiment request the form's fields make (the embedded suite; the API checks every bound). */
export function requestOf(p: Plan) {
  return {
    env: "embedded",
    arms: p.arms,
    seeds: p.seeds
      .split(",")
      .map((s) => Number(s.trim()))
      .filter((n) => Number.isInteger(n)),
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
    budget: { rollouts: p.budget },
  };
}

function StartForm(props: { onStarted: (id: string) => void }) {
  const [plan, setPlan] = useState<Plan>(DEFAULT_PLAN);
  const [quote, setQuote] = useState<Quote | undefined>();
  const [error, setError] = useState<string | undefined>();
  const set = (patch: Partial<Plan>) => {
    setPlan({ ...plan, ...patch });
    setQuote(undefined);
  };
  const num = (field: keyof Plan) => (e: Event) => set({ [field]: Number((e.target as HTMLInputElement).value) });
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
  return html`<section>
    <h2>Start an experiment (embedded suite)</h2>
    <div>${ARMS.map((a) => html`<label><input type="checkbox" name=${`arm-${a}`} checked=${plan.arms.includes(a)} onChange=${() => toggle(a)} /> ${a}</label>`)}</div>
    <label>seeds <input name="seeds" value=${plan.seeds} onInput=${(e: Event) => set({ seeds: (e.target as HTMLInputElement).value })} /></label>
    <label>training steps <input type="number" name="steps" min="1" value=${plan.steps} onInput=${num("steps")} /></label>
    <label>batch size <input type="number" name="batchSize" min="1" value=${plan.batchSize} onInput=${num("batchSize")} /></label>
    <label>eval samples <input type="number" name="evalSamples" min="3" value=${plan.evalSamples} onInput=${num("evalSamples")} /></label>
    <label>eval tasks <input type="number" name="evalTasks" min="1" value=${plan.evalTasks} onInput=${num("evalTasks")} /></label>
    <label>budget (rollouts) <input type="number" name="budget" min="1" value=${plan.budget} onInput=${num("budget")} /></label>
    <div><button onClick=${ask}>Get a quote</button></div>
    ${
      quote &&
      html`<div class="quote" data-testid="quote">
        <p>Quote: <b>${quote.rollouts}</b> rollouts, charge <b>$${fmt(quote.chargeUsd, 4)}</b> (cost of goods $${fmt(quote.costOfGoods.totalUsd, 4)})</p>
        <button onClick=${start}>Start experiment</button>
      </div>`
    }
    <${ErrorLine} error=${error} />
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
