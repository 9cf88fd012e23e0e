import ts from "typescript";
import { readFileSync } from "node:fs";
import { execSync } from "node:child_process";
const files = execSync("git ls-files 'packages/core/src/**/*.ts'", { encoding: "utf8" }).split("\n").filter(Boolean);
const limit = Number(process.argv[2] ?? 80);
for (const f of files) {
  const src = ts.createSourceFile(f, readFileSync(f, "utf8"), ts.ScriptTarget.Latest, true);
  const visit = (n) => {
    if (ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n) || ts.isArrowFunction(n) || ts.isFunctionExpression(n)) {
      const a = src.getLineAndCharacterOfPosition(n.getStart()).line,
        b = src.getLineAndCharacterOfPosition(n.getEnd()).line;
      if (b - a + 1 > limit) console.log(`${f}:${a + 1} ${b - a + 1} lines ${n.name?.getText() ?? "(anonymous)"}`);
    }
    ts.forEachChild(n, visit);
  };
  visit(src);
}
