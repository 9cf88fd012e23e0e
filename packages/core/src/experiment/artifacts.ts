import { z } from "zod";
import { CoreError, ValidationError, parseOrThrow } from "../errors.ts";

/**
 * The experiment an artifact belongs to, as a store writes it: one path segment (letters, digits,
 * `_` and `-`), so no id can name a folder or key outside its own.
 */
export const ArtifactExperimentId = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]*$/, "an experiment id is letters, digits, _ and - (one path segment)");

/**
 * An artifact's file name: lower-case letters, digits and `-`, then `.md` or `.png`. No `/`, no
 * `..`, no hidden file: a name is a leaf of its experiment's folder and nothing else.
 */
export const ArtifactName = z
  .string()
  .max(64)
  .regex(/^[a-z0-9][a-z0-9-]*\.(md|png)$/, "an artifact name is lower-case letters, digits and - with .md or .png");
export type ArtifactName = z.infer<typeof ArtifactName>;

/** A plot's file name: an {@link ArtifactName} ending in `.png`. */
export const PlotFile = z
  .string()
  .max(64)
  .regex(/^[a-z0-9][a-z0-9-]*\.png$/, "a plot's file name is lower-case letters, digits and - with .png");

/** The media type of each kind of artifact, by extension. */
export const ARTIFACT_TYPES = { md: "text/markdown; charset=utf-8", png: "image/png" } as const;
export const ArtifactContentType = z.enum([ARTIFACT_TYPES.md, ARTIFACT_TYPES.png]);
export type ArtifactContentType = z.infer<typeof ArtifactContentType>;

/** The media type an artifact's name implies. */
export const contentTypeOf = (name: ArtifactName): ArtifactContentType =>
  name.endsWith(".png") ? ARTIFACT_TYPES.png : ARTIFACT_TYPES.md;

/** The largest artifact a store keeps (a plot is ~100 KB, a report ~20 KB). */
export const MAX_ARTIFACT_BYTES = 8 * 1024 * 1024;

export interface ExperimentArtifact {
  name: ArtifactName;
  contentType: ArtifactContentType;
  bytes: Uint8Array;
}

/** What the run's report is stored as. */
export const REPORT_ARTIFACT: ArtifactName = "report.md";

/**
 * The files a finished run leaves beside its record: its markdown report and its plots. Written
 * once per name by the coordinator (a rewrite replaces the file), read by the API. Every
 * adapter refuses an id or name its schema refuses ({@link ArtifactExperimentId},
 * {@link ArtifactName}) with a ValidationError before touching storage.
 */
export interface ExperimentArtifacts {
  put(experimentId: string, name: string, bytes: Uint8Array, contentType: ArtifactContentType): Promise<void>;
  /** The artifact, or undefined when the run has none of that name. */
  get(experimentId: string, name: string): Promise<ExperimentArtifact | undefined>;
  /** The run's artifact names, sorted. */
  list(experimentId: string): Promise<ArtifactName[]>;
}

/** An experiment id checked against {@link ArtifactExperimentId} (a ValidationError otherwise). */
export const checkedExperimentId = (experimentId: string): string =>
  parseOrThrow(ArtifactExperimentId, experimentId, "experiment id");

/**
 * The experiment id and artifact name checked against their schemas, and on a write the bytes
 * against {@link MAX_ARTIFACT_BYTES} and the type against the name's: what every adapter calls first.
 */
export function checkedArtifact(
  experimentId: string,
  name: string,
  written?: { bytes: Uint8Array; contentType: string },
) {
  const checked = {
    experimentId: checkedExperimentId(experimentId),
    name: parseOrThrow(ArtifactName, name, "artifact name"),
  };
  if (written && written.bytes.byteLength > MAX_ARTIFACT_BYTES)
    throw new ValidationError("artifact", [
      `${name} is ${written.bytes.byteLength} bytes, above ${MAX_ARTIFACT_BYTES}`,
    ]);
  if (written && written.contentType !== contentTypeOf(checked.name))
    throw new ValidationError("artifact", [`${name} is ${contentTypeOf(checked.name)}, not ${written.contentType}`]);
  return checked;
}

/** A run's report or plot that is not there (the run is not finished, or rendering it failed). */
export class ArtifactNotFoundError extends CoreError {
  constructor(message: string) {
    super("NOT_FOUND", message);
  }
}
