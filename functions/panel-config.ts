import { z } from "zod";
import { ValidationError, formatIssues, systemClock } from "@harness-s/core";
import { VoterPanel, statisticalVoters } from "@harness-s/core/voting";
import { votersFromPanel, type PanelRouting } from "@harness-s/adapters/llm";

/** The `VoterKeys` secret: API keys by the names a panel's voters give as `apiKeySecret`. */
export const VoterKeys = z.record(z.string().min(1), z.string().min(1));

/**
 * The cloud's voter panel: the `VoterPanel` secret holds the same JSON document as a CLI panel
 * file (`serve --voters`), the `VoterKeys` secret a JSON object of the keys it names
 * (`LlmApiKey` is also found under its own name). Parsed once at cold start: a malformed document
 * or a key it names and `VoterKeys` lacks fails the cold start with every problem listed.
 * Neither set: no panel (the statistical voters decide).
 *
 * @example
 * // sst secret set VoterPanel "$(cat panel.json)"; sst secret set VoterKeys '{"OPENAI_KEY":"sk-…"}'
 * const panel = panelFromSecrets({ panel: config.voterPanel, keys: config.voterKeys });
 */
export function panelFromSecrets(secrets: {
  panel?: string;
  keys?: string;
  llmApiKey?: string;
}): PanelRouting | undefined {
  if (secrets.panel === undefined) return undefined;
  const panel = VoterPanel.safeParse(parseJson(secrets.panel, "VoterPanel secret"));
  if (!panel.success) throw new ValidationError("VoterPanel secret", formatIssues(panel.error.issues));
  const keys = VoterKeys.safeParse(secrets.keys === undefined ? {} : parseJson(secrets.keys, "VoterKeys secret"));
  if (!keys.success) throw new ValidationError("VoterKeys secret", formatIssues(keys.error.issues));
  const apiKey = (name: string) => keys.data[name] ?? (name === "LlmApiKey" ? secrets.llmApiKey : undefined);
  return { ...votersFromPanel(panel.data, { apiKey, statistical: statisticalVoters }), clock: systemClock };
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ValidationError(what, ["(root): not valid JSON"]);
  }
}
