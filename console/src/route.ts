import { useEffect, useState } from "preact/hooks";

/** The page the tab shows, from the URL's fragment (`#/experiments/exp_…`): ids only, never a key. */
export function useRoute(): string[] {
  const parts = () => location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  const [route, setRoute] = useState(parts());
  useEffect(() => {
    const changed = () => setRoute(parts());
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return route;
}

export const go = (path: string) => {
  location.hash = `#${path}`;
};
