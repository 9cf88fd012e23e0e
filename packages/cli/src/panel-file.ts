import { ValidationError, VoterPanel, statisticalVoters, systemClock, type PanelSettings, type Voter } from "@harness-s/core";
import { votersFromPanel, type PanelRouting } from "@harness-s/adapters";
import { readJsonFile } from "./json-file.ts";

/**
 * A voter panel file's voters and settings (LLM voters' keys from the environment variables the
 * file names): what `serve --voters` and `experiment --voters` decide with.
 *
 * @example
 * const { routing, settings } = await readPanelFile("panel.json");
 */
export async function readPanelFile(path: string): Promise<{ routing: PanelRouting; voters: Voter[]; settings: PanelSettings }> {
  const panel = await readJsonFile(path, VoterPanel);
  if (!panel) throw new ValidationError("--voters", [`no voter panel file ${path}`]);
  const routing = votersFromPanel(panel, { apiKey: (name) => process.env[name], statistical: statisticalVoters });
  const settings: PanelSettings = { options: routing.options, timeoutMs: routing.timeoutMs, clock: systemClock, ...(routing.fallback ? { fallback: routing.fallback } : {}) };
  return { routing, voters: routing.voters, settings };
}
