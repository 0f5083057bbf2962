/**
 * What the tests share: errord as a process with the test's own manifests (on a free
 * port, or the port given, to restart it there), and waiting for a condition by polling,
 * never for a fixed time.
 *
 * The Python interpreter is `ERRORD_PYTHON` (the pytest wrapper sets it), else the
 * checkout's `.venv/bin/python`.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

/** The repository's root (this file runs from clients/typescript/build/test). */
export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");
const PYTHON = process.env["ERRORD_PYTHON"] || join(REPO, ".venv/bin/python");

/** Seconds a test waits for a condition before it fails: generous, for loaded machines. */
export const PATIENCE = 30;

/** errord running as a process. */
export interface Daemon {
  readonly address: string;
  /** The operator token it made beside its database: its trace and breakers need it. */
  readonly token: string;
  readonly process: ChildProcess;
  readonly stderr: () => string;
  /** Send `signal` and wait for the process to exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** A fresh directory for one test's database and manifests. */
export function scratch(): string {
  return mkdtempSync(join(tmpdir(), "errord-ts-"));
}

/** `yaml` as the manifests of a directory in `dir`. */
export function writeManifests(dir: string, yaml: string): string {
  const manifests = join(dir, "tools");
  mkdirSync(manifests, { recursive: true });
  writeFileSync(join(manifests, "tools.yaml"), yaml);
  return manifests;
}

/** A loopback port free now, for a daemon that must come back on the same one. */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => done(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** errord serving on 127.0.0.1:`port` (0: any), its database and `yaml`'s manifests in `dir`. */
export function startErrord(dir: string, yaml: string, port = 0): Promise<Daemon> {
  const manifests = writeManifests(dir, yaml);
  return serveErrord(["--listen", `127.0.0.1:${port}`, "--db", join(dir, "errord.db"), "--manifests", manifests], dir);
}

/** `errord serve ARGS` run in `cwd` (relative paths are its), once it serves; its operator
 * token is the one beside its `--db`. */
export function serveErrord(serveArgs: readonly string[], cwd: string): Promise<Daemon> {
  const db = serveArgs[serveArgs.indexOf("--db") + 1];
  if (!serveArgs.includes("--db") || db === undefined) throw new Error(`errord serve needs --db here: ${serveArgs.join(" ")}`);
  const tokenFile = join(resolve(cwd, dirname(db)), "operator.token");
  const env = { ...process.env, PYTHONPATH: [REPO, join(REPO, "clients/python/src")].join(":") };
  const args = ["-m", "errord", "serve", ...serveArgs];
  const child = spawn(PYTHON, args, { cwd, env, stdio: ["ignore", "ignore", "pipe"] });
  let text = "";
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  return new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`errord did not start within ${PATIENCE} s:\n${text}`)), PATIENCE * 1000);
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      text += chunk;
      const match = /serving on (\S+),/.exec(text);
      if (match?.[1] && timer) {
        clearTimeout(timer);
        done({
          address: match[1],
          token: readFileSync(tokenFile, "utf8").trim(),
          process: child,
          stderr: () => text,
          async stop(signal: NodeJS.Signals = "SIGKILL") {
            if (child.exitCode === null && child.signalCode === null) child.kill(signal);
            await exited;
          },
        });
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      fail(new Error(`errord exited (${code}) before serving:\n${text}`));
    });
  });
}

/** The bodies of the failures and outcomes errord recorded for `turnId` in the database
 * `db`, as text (read with Python's sqlite3, the trace's own table). */
export function recordedReports(db: string, turnId: string): string[] {
  const read =
    "import sqlite3, sys, json\n" +
    "with sqlite3.connect(f'file:{sys.argv[1]}?mode=ro', uri=True) as db:\n" +
    "    rows = db.execute(\"SELECT body FROM events WHERE turn_id = ? AND kind IN ('failure', 'outcome') ORDER BY sequence\", (sys.argv[2],))\n" +
    "    print(json.dumps([bytes(body).decode('utf-8', 'replace') for (body,) in rows]))\n";
  return JSON.parse(execFileSync(PYTHON, ["-c", read, db, turnId], { encoding: "utf8" })) as string[];
}

/** Poll `condition` every 20 ms until it gives a value other than undefined/false. */
export async function waitFor<T>(condition: () => Promise<T | undefined | false> | T | undefined | false, what: string): Promise<T> {
  const deadline = performance.now() + PATIENCE * 1000;
  for (;;) {
    const value = await condition();
    if (value !== undefined && value !== false) return value;
    if (performance.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 20));
  }
}

/** The TypeScript package's directory. */
export const PACKAGE = resolve(REPO, "clients/typescript");

/** A page's example as the page gives it: its files by name, how errord is started, how
 * the script is run, and what it prints. */
export interface Example {
  /** The files the page says to save, by the name it gives them. */
  readonly files: ReadonlyMap<string, string>;
  /** The script, by its name. */
  readonly script: string;
  /** `errord serve`'s arguments, its log and `&` left out. */
  readonly serve: readonly string[];
  /** The command that runs the script. */
  readonly run: readonly string[];
  readonly printed: string;
}

/** The `## {heading}` section of `page` (markdown), read as a reader follows it: the
 * files it says to save (the `js` one is the script), its `errord serve` and `node`
 * commands, and the output block after the script. */
export function readExample(page: string, heading: string): Example {
  const section = page.split(/^## /m).find((part) => part.startsWith(heading));
  if (section === undefined) throw new Error(`the page has no "## ${heading}" section`);
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
  if (files.size !== 2 || !script || !serve || !run || printed === undefined) {
    throw new Error(`the example lacks a file, a command or its output: ${[...files.keys()]}`);
  }
  return { files, script, serve: serve.split(/\s+/), run: run.split(/\s+/), printed };
}

/** `args` with `--listen`'s address made a free loopback port, and that address's port. */
export function onAFreePort(args: readonly string[]): { args: string[]; port: string } {
  const at = args.indexOf("--listen");
  if (at < 0) throw new Error("the page's errord serve has no --listen");
  const port = (args[at + 1] ?? "").split(":").pop() ?? "";
  return { args: args.map((arg, i) => (i === at + 1 ? "127.0.0.1:0" : arg)), port };
}

/** `line` as a pattern: its text literally, each `...` standing for any text. */
export function linePattern(line: string): RegExp {
  const literal = line.split("...").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${literal.join(".*")}$`);
}

/** A directory where `@errord/client` resolves to this checkout's package, as it does
 * inside the package (or in a project that installed it), and each of `packages` to the
 * package's own copy (its dev dependencies: the frameworks an adapter's example uses). */
export function projectUsingThisPackage(packages: readonly string[] = []): string {
  const project = scratch();
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "page-example", version: "1.0.0", type: "module", private: true }));
  mkdirSync(join(project, "node_modules/@errord"), { recursive: true });
  symlinkSync(PACKAGE, join(project, "node_modules/@errord/client"), "dir");
  for (const name of packages) {
    mkdirSync(dirname(join(project, "node_modules", name)), { recursive: true });
    symlinkSync(join(PACKAGE, "node_modules", name), join(project, "node_modules", name), "dir");
  }
  return project;
}

/** Run the example of `page`'s `## {heading}` section as a reader does: its files saved
 * under the names it gives in a project where `@errord/client` is this package (and
 * `packages` the package's own), errord started by the page's `errord serve` (on a free
 * port), its script run by the page's `node` command; what it prints must be the page's
 * output, line by line (a `...` stands for any text). */
export async function runPageExample(page: string, heading: string, packages: readonly string[] = []): Promise<void> {
  const example = readExample(readFileSync(page, "utf8"), heading);
  const project = projectUsingThisPackage(packages);
  const served = onAFreePort(example.serve);
  for (const [name, text] of example.files) {
    mkdirSync(dirname(join(project, name)), { recursive: true });
    writeFileSync(join(project, name), name === example.script ? "" : text);
  }
  const daemon = await serveErrord(served.args, project);
  try {
    const script = example.files.get(example.script) ?? "";
    const target = `127.0.0.1:${served.port}`;
    if (!script.includes(target)) throw new Error(`the example's script does not target the daemon the page starts (${target})`);
    writeFileSync(join(project, example.script), script.replaceAll(target, daemon.address));
    const [command, ...args] = example.run;
    if (command !== "node" || args.join(" ") !== example.script) throw new Error(`the page runs another file than the one it saves: ${example.run.join(" ")}`);
    const { stdout } = await promisify(execFile)(process.execPath, args, { cwd: project, encoding: "utf8", timeout: 60_000 });
    const shown = stdout.trimEnd().split("\n");
    const expected = example.printed.trimEnd().split("\n");
    if (shown.length !== expected.length) throw new Error(`the example printed ${shown.length} lines, the page shows ${expected.length}:\n${stdout}`);
    expected.forEach((line, i) => {
      if (!linePattern(line).test(shown[i] ?? "")) throw new Error(`line ${i + 1} differs from the page's "${line}":\n${stdout}`);
    });
  } finally {
    await daemon.stop();
  }
}
