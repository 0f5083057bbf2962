/** The README's "A complete example" runs as written: its manifests saved under the name
 * the README gives, errord started by the README's own `errord serve` command (on a free
 * port), its script saved under its name in a project where `@errord/client` is this
 * package, and run by the README's own command: it prints what the README shows (a `...`
 * in the README stands for any text). */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { after, before, test } from "node:test";
import { REPO, scratch, serveErrord, type Daemon } from "./helpers.js";

const PACKAGE = resolve(REPO, "clients/typescript");

/** The example as the README gives it: its files by name, how errord is started, how the
 * script is run, and what it prints. */
interface Example {
  /** The files the README says to save, by the name it gives them. */
  readonly files: ReadonlyMap<string, string>;
  /** The script, by its name. */
  readonly script: string;
  /** `errord serve`'s arguments, its log and `&` left out. */
  readonly serve: readonly string[];
  /** The command that runs the script. */
  readonly run: readonly string[];
  readonly printed: string;
}

/** The README's "## A complete example" section, read as a reader follows it. */
function readExample(readme: string): Example {
  const section = readme.split(/^## /m).find((part) => part.startsWith("A complete example"));
  assert.ok(section, 'the README has no "## A complete example" section');
  const files = new Map<string, string>();
  let script = "";
  let printed: string | undefined;
  let prose = "";
  for (const [block, lang, body] of section.matchAll(/^```(\w*)\n([\s\S]*?)^```$|^(?!```)[^\n]*$/gm)) {
    if (lang === undefined && body === undefined) {
      prose += `${block} `;
      continue;
    }
    const saved = /[Ss]ave this as `([^`]+)`/.exec(prose)?.[1];
    if (saved !== undefined) files.set(saved, body ?? "");
    if (lang === "js" && saved !== undefined) script = saved;
    if (!lang && script) printed ??= body;
    prose = "";
  }
  const serve = /^ {4}\$ \S*errord serve (.+?)(?: 2>\S+)?(?: &)?$/m.exec(section)?.[1];
  const run = /^ {4}\$ (node \S+)$/m.exec(section)?.[1];
  assert.ok(files.size === 2 && script && serve && run && printed, `the example lacks a file, a command or its output: ${[...files.keys()]}`);
  return { files, script, serve: serve.split(/\s+/), run: run.split(/\s+/), printed };
}

/** `args` with `--listen`'s address made a free loopback port, and that address's port. */
function onAFreePort(args: readonly string[]): { args: string[]; port: string } {
  const at = args.indexOf("--listen");
  assert.ok(at >= 0, "the README's errord serve has no --listen");
  const port = (args[at + 1] ?? "").split(":").pop() ?? "";
  return { args: args.map((arg, i) => (i === at + 1 ? "127.0.0.1:0" : arg)), port };
}

/** `line` as a pattern: its text literally, each `...` standing for any text. */
function linePattern(line: string): RegExp {
  const literal = line.split("...").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${literal.join(".*")}$`);
}

/** A directory where `@errord/client` resolves to this checkout's package, as it does
 * inside the package (or in a project that installed it). */
function projectUsingThisPackage(): string {
  const project = scratch();
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "readme-example", version: "1.0.0", type: "module", private: true }));
  mkdirSync(join(project, "node_modules/@errord"), { recursive: true });
  symlinkSync(PACKAGE, join(project, "node_modules/@errord/client"), "dir");
  return project;
}

const example = readExample(readFileSync(join(PACKAGE, "README.md"), "utf8"));
const project = projectUsingThisPackage();
const served = onAFreePort(example.serve);
let daemon: Daemon;

before(async () => {
  for (const [name, text] of example.files) {
    mkdirSync(dirname(join(project, name)), { recursive: true });
    writeFileSync(join(project, name), name === example.script ? "" : text);
  }
  daemon = await serveErrord(served.args, project);
});
after(() => daemon.stop());

test("the README's complete example, run as the README says, prints the README's output line by line", async () => {
  const script = example.files.get(example.script) ?? "";
  const target = `127.0.0.1:${served.port}`;
  assert.ok(script.includes(target), `the example's script does not target the daemon the README starts (${target})`);
  writeFileSync(join(project, example.script), script.replaceAll(target, daemon.address));
  const [command, ...args] = example.run;
  assert.equal(command, "node");
  assert.deepEqual(args, [example.script], "the README runs another file than the one it saves");
  const { stdout } = await promisify(execFile)(process.execPath, args, { cwd: project, encoding: "utf8", timeout: 30_000 });
  const shown = stdout.trimEnd().split("\n");
  const expected = example.printed.trimEnd().split("\n");
  assert.equal(shown.length, expected.length, `the example printed ${shown.length} lines, the README shows ${expected.length}:\n${stdout}`);
  expected.forEach((line, i) => assert.match(shown[i] ?? "", linePattern(line), `line ${i + 1} differs:\n${stdout}`));
});
