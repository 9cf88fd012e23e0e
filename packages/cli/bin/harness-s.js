#!/usr/bin/env node
// Runs the CLI from its build (build.mjs: one bundled file per entry), made first when a source file is newer.
import { currentCliBuild } from "./build.mjs";

const dir = await currentCliBuild();
await import(new URL(`file://${dir}/main.mjs`).href);
