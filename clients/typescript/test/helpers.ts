/**
 * What the tests share: errord as a process with the test's own manifests (on a free
 * port, or the port given, to restart it there), and waiting for a condition by polling,
 * never for a fixed time.
 *
 * The Python interpreter is `ERRORD_PYTHON` (the pytest wrapper sets it), else the
 * checkout's `.venv/bin/python`.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

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
