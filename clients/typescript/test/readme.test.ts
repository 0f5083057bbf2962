/** The README's "A complete example" runs as written: its manifests serve an errord
 * process, its script runs with node in a project where `@errord/client` is this package,
 * and it prints what the README shows (a `...` in the README stands for any text). */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { after, before, test } from "node:test";
import { REPO, scratch, startErrord, type Daemon } from "./helpers.js";

const PACKAGE = resolve(REPO, "clients/typescript");
const README_TARGET = "127.0.0.1:50051";

/** The example's three fenced blocks: the manifests, the script, and what it prints. */
interface Example {
  readonly yaml: string;
  readonly js: string;
  readonly printed: string;
}

/** The fenced blocks of the README's "## A complete example" section, in order. */
function readExample(readme: string): Example {
  const section = readme.split(/^## /m).find((part) => part.startsWith("A complete example"));
  assert.ok(section, 'the README has no "## A complete example" section');
  const blocks = [...section.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map(([, lang, body]) => ({ lang, body: body ?? "" }));
  const [yaml, js, printed] = blocks;
  assert.ok(yaml?.lang === "yaml" && js?.lang === "js" && printed?.lang === "", `expected yaml, js, output blocks, got ${blocks.map((b) => b.lang || "plain")}`);
  return { yaml: yaml.body, js: js.body, printed: printed.body };
}

/** `line` as a pattern: its text literally, each `...` standing for any text. */
function linePattern(line: string): RegExp {
  const literal = line.split("...").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${literal.join(".*")}$`);
}

/** A project in a fresh directory whose `@errord/client` is this checkout's package. */
function projectUsingThisPackage(): string {
  const project = scratch();
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "readme-example", version: "1.0.0", type: "module", private: true }));
  mkdirSync(join(project, "node_modules/@errord"), { recursive: true });
  symlinkSync(PACKAGE, join(project, "node_modules/@errord/client"), "dir");
  return project;
}

const example = readExample(readFileSync(join(PACKAGE, "README.md"), "utf8"));
let daemon: Daemon;

before(async () => {
  daemon = await startErrord(scratch(), example.yaml);
});
after(() => daemon.stop());

test("the README's complete example, run against its manifests, prints the README's output line by line", async () => {
  assert.ok(example.js.includes(README_TARGET), `the example's script no longer targets ${README_TARGET}`);
  const project = projectUsingThisPackage();
  const script = join(project, "example.mjs");
  writeFileSync(script, example.js.replaceAll(README_TARGET, daemon.address));
  const { stdout } = await promisify(execFile)(process.execPath, [script], { cwd: project, encoding: "utf8", timeout: 30_000 });
  const shown = stdout.trimEnd().split("\n");
  const expected = example.printed.trimEnd().split("\n");
  assert.equal(shown.length, expected.length, `the example printed ${shown.length} lines, the README shows ${expected.length}:\n${stdout}`);
  expected.forEach((line, i) => assert.match(shown[i] ?? "", linePattern(line), `line ${i + 1} differs:\n${stdout}`));
});
