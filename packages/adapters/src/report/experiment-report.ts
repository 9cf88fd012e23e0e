import type { ExperimentReportRenderer } from "@harness-s/core/experiment";
import { renderReport } from "./markdown.ts";
import { PoolsFile } from "./harm.ts";
import { summaryPlots } from "./summary-plots.ts";

/**
 * The service's report of a run, made by the CLI's code: `report.md` ({@link renderReport} from
 * the summary and each seed's pool, titled with the run's environment and model, ending with its
 * family's section as the CLI's does) and the plots of {@link summaryPlots}.
 */
export const renderExperimentReport: ExperimentReportRenderer = async ({ summary, pools, note, title, section }) => {
  const markdown =
    renderReport(summary, {
      ...(pools ? { pools: PoolsFile.parse(pools) } : {}),
      ...(note ? { note } : {}),
      ...(title ? { title } : {}),
    }) + (section ?? "");
  const plots = await summaryPlots(summary);
  return [
    { name: "report.md", bytes: new TextEncoder().encode(markdown) },
    ...plots.map((p) => ({ name: p.name, bytes: new Uint8Array(p.png) })),
  ];
};
