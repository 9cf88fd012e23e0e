// Preloaded by scripts/node22.sh (NODE_OPTIONS --import) into every Node 22 process it starts: a
// native addon under node_modules/<package>/build/ loads from its copy built for Node 22 in
// .ci/node22/addons/<package>/build/ when there is one. The repo's own build stays the machine
// Node's, so `npm test` and the Node 22 pass share one node_modules.
import { existsSync } from "node:fs";
import { join } from "node:path";

const copies = join(import.meta.dirname, "..", ".ci", "node22", "addons");
const dlopen = process.dlopen;
process.dlopen = function (module, filename, ...rest) {
  const m = /[\\/]node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)[\\/](build[\\/].+)$/.exec(String(filename));
  const copy = m ? join(copies, m[1], m[2]) : undefined;
  return dlopen.call(this, module, copy && existsSync(copy) ? copy : filename, ...rest);
};
