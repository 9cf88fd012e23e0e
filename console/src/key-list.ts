import { useState } from "preact/hooks";
import { getJson } from "./api.ts";
import { ErrorLine, html, useLoaded } from "./ui.ts";

/** A page of one of the key's lists as the API answers it (`GET /v1/experiments`, `GET /v1/rescues`). */
interface Page<T> {
  items: T[];
  next: string | null;
}
/** Items the console asks for a page (the API's default and bound are its own: `limit` ≤ 50). */
const PAGE_SIZE = 20;

/**
 * The key's own runs from `path`, newest first, a page at a time ("More" follows the API's cursor):
 * the API lists a key only what it started, so no other key's run can reach the page.
 */
export function KeyList<T>(props: {
  path: string;
  name: string;
  head: string[];
  row: (item: T) => unknown;
  empty: string;
}) {
  const [cursors, setCursors] = useState<string[]>([]);
  const pages = useLoaded(
    () =>
      Promise.all(
        [undefined, ...cursors].map((c) =>
          getJson<Page<T>>(`${props.path}?limit=${PAGE_SIZE}${c ? `&cursor=${encodeURIComponent(c)}` : ""}`),
        ),
      ),
    [props.path, cursors.length],
  );
  const items = (pages.value ?? []).flatMap((p) => p.items);
  const next = pages.value?.[pages.value.length - 1]?.next;
  return html`<div>
    <${ErrorLine} error=${pages.error} />
    <table data-testid=${props.name}>
      <thead><tr>${props.head.map((h) => html`<th>${h}</th>`)}</tr></thead>
      <tbody>${items.map(props.row)}</tbody>
    </table>
    ${pages.value && items.length === 0 && html`<p class="muted" data-testid=${`${props.name}-empty`}>${props.empty}</p>`}
    ${next && html`<button class="plain" onClick=${() => setCursors([...cursors, next])}>More</button>`}
  </div>`;
}
