/** docs/coming-from.md runs as written: its manifests saved under the name the page gives,
 * errord started by the page's own `errord serve` command (on a free port), each script
 * saved under its name in a project where `@errord/client` is this package, and run by the
 * page's own command: each prints what the page shows (a `...` stands for any text). Its
 * links lead to files and headings that exist. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { after, before, test } from "node:test";
import { REPO, scratch, serveErrord, type Daemon } from "./helpers.js";

const PACKAGE = resolve(REPO, "clients/typescript");
const PAGE = join(PACKAGE, "docs/coming-from.md");

/** A command the page runs, and what it shows it prints. */
interface Run {
  readonly script: string;
  readonly printed: string;
}

/** The page as a reader follows it: the files it saves, how it starts errord, what it runs. */
interface Walk {
  readonly files: ReadonlyMap<string, string>;
  readonly serve: readonly string[];
  readonly runs: readonly Run[];
}

function readPage(page: string): Walk {
  const files = new Map<string, string>();
  const runs: Run[] = [];
  let prose = "";
  let running: string | undefined;
  for (const [block, lang, body] of page.matchAll(/^```(\w*)\n([\s\S]*?)^```$|^(?!```)[^\n]*$/gm)) {
    if (lang === undefined && body === undefined) {
      prose += `${block}\n`;
      continue;
    }
    const saved = /[Ss]ave this as `([^`]+)`/.exec(prose)?.[1];
    if (saved !== undefined) files.set(saved, body ?? "");
    const command = /^ {4}\$ node (\S+)$/m.exec(prose)?.[1];
    if (command !== undefined) running = command;
    if (!lang && running !== undefined) {
      runs.push({ script: running, printed: body ?? "" });
      running = undefined;
    }
    prose = "";
  }
  const serve = /^ {4}\$ \S*errord serve (.+?)(?: 2>\S+)?(?: &)?$/m.exec(page)?.[1];
  assert.ok(serve && runs.length > 0, "the page has no errord serve command or no script run");
  for (const run of runs) assert.ok(files.has(run.script), `the page runs ${run.script}, which it does not save`);
  return { files, serve: serve.split(/\s+/), runs };
}

/** `line` as a pattern: its text literally, each `...` standing for any text. */
function linePattern(line: string): RegExp {
  const literal = line.split("...").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${literal.join(".*")}$`);
}

const walk = readPage(readFileSync(PAGE, "utf8"));
const listen = walk.serve.indexOf("--listen");
const shownTarget = walk.serve[listen + 1] ?? "";
const project = scratch();
let daemon: Daemon;

before(async () => {
  assert.ok(listen >= 0, "the page's errord serve has no --listen");
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "coming-from", version: "1.0.0", type: "module", private: true }));
  mkdirSync(join(project, "node_modules/@errord"), { recursive: true });
  symlinkSync(PACKAGE, join(project, "node_modules/@errord/client"), "dir");
  for (const [name, text] of walk.files) {
    mkdirSync(dirname(join(project, name)), { recursive: true });
    writeFileSync(join(project, name), text);
  }
  daemon = await serveErrord(walk.serve.map((arg, i) => (i === listen + 1 ? "127.0.0.1:0" : arg)), project);
  for (const run of walk.runs) {
    const script = walk.files.get(run.script) ?? "";
    assert.ok(script.includes(shownTarget), `${run.script} does not target the daemon the page starts (${shownTarget})`);
    writeFileSync(join(project, run.script), script.replaceAll(shownTarget, daemon.address));
  }
});
after(() => daemon?.stop());

for (const run of walk.runs) {
  test(`coming-from.md: node ${run.script} prints what the page shows, line by line`, async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [run.script], { cwd: project, encoding: "utf8", timeout: 60_000 });
    const shown = stdout.trimEnd().split("\n");
    const expected = run.printed.trimEnd().split("\n");
    assert.equal(shown.length, expected.length, `${run.script} printed ${shown.length} lines, the page shows ${expected.length}:\n${stdout}`);
    expected.forEach((line, i) => assert.match(shown[i] ?? "", linePattern(line), `line ${i + 1} differs:\n${stdout}`));
  });
}

/** The anchors GitHub gives the headings of the page at `path`. */
function anchors(path: string): Set<string> {
  const headings = readFileSync(path, "utf8").match(/^#+ .+$/gm) ?? [];
  return new Set(headings.map((heading) => heading.replace(/^#+ /, "").toLowerCase().replace(/[^\w\- ]/g, "").replaceAll(" ", "-")));
}

test("coming-from.md's links lead to files and headings that exist", () => {
  const broken: string[] = [];
  for (const [, target] of readFileSync(PAGE, "utf8").matchAll(/\]\(([^)\s]+)\)/g)) {
    if (target === undefined || /^https?:/.test(target)) continue;
    const [path = "", anchor] = target.split("#");
    const linked = path ? resolve(dirname(PAGE), path) : PAGE;
    if (!existsSync(linked)) broken.push(target);
    else if (anchor && linked.endsWith(".md") && !anchors(linked).has(anchor)) broken.push(`${target} (no such heading)`);
  }
  assert.deepEqual(broken, []);
});
