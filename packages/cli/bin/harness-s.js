#!/usr/bin/env node
// Runs the CLI from its build (build.mjs: one bundled file per entry), made first when a source file is newer.
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { currentCliBuild } from "./build.mjs";

const dir = await currentCliBuild();
await import(pathToFileURL(join(dir, "main.mjs")).href);
