import { ValidationError, systemClock } from "@harness-s/core";
import { VoterPanel, statisticalVoters } from "@harness-s/core/voting";
import { votersFromPanel, type PanelRouting } from "@harness-s/adapters/llm";
import { readJsonFile } from "@harness-s/envs";

/** A voter panel file, parsed (a missing file is a usage error). */
export async function readPanelDocument(path: string): Promise<VoterPanel> {
  const panel = await readJsonFile(path, VoterPanel);
  if (!panel) throw new ValidationError("--voters", [`no voter panel file ${path}`]);
  return panel;
}

/**
 * A panel's voters and settings, timed by the system clock (LLM voters' keys from the environment variables it names).
 */
export function panelRouting(panel: VoterPanel): PanelRouting {
  return {
    ...votersFromPanel(panel, { apiKey: (name) => process.env[name], statistical: statisticalVoters }),
    clock: systemClock,
  };
}

/**
 * A voter panel file's voters and settings: what `serve --voters` and `experiment --voters` decide with.
 *
 * @example
 * const panel = await readPanelFile("panel.json");
 */
export async function readPanelFile(path: string): Promise<PanelRouting> {
  return panelRouting(await readPanelDocument(path));
}
