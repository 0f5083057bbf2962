/** `npm pack` makes a package that installs into a fresh project, whose ESM import gives
 * the executor and the clients, and whose compat subpaths (`@errord/client/compat/...`)
 * the seeds' modules, with their type declarations shipped; the optional peer
 * `@opentelemetry/api` is not installed with it, and a call runs without it. */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { test } from "node:test";
import { REPO, scratch } from "./helpers.js";

const PACKAGE = resolve(REPO, "clients/typescript");
const npm = (args: string[], cwd: string): string =>
  execFileSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], { cwd, encoding: "utf8" });

/** An executor run, errord away, in a project without `@opentelemetry/api`: its import
 * fails quietly and the call goes on. */
const WITHOUT_OPENTELEMETRY = `
const { Executor, mockTool } = await import('@errord/client');
const executor = new Executor({ tools: [mockTool('t', { answer: 1 })], target: '127.0.0.1:1', decisionTimeout: 0.05, logger: { warn() {} } });
const result = await executor.runOne({ id: 'c1', name: 't', arguments: {} });
await executor.close(0.1);
console.log(result.status);
`;

test("npm pack's tarball installs into a fresh project without the optional @opentelemetry/api, imports, and runs a call", () => {
  const out = scratch();
  npm(["pack", "--pack-destination", out], PACKAGE);
  const [tarball] = readdirSync(out).filter((name) => name.endsWith(".tgz"));
  assert.ok(tarball, "npm pack made no tarball");
  const project = scratch();
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "fresh", version: "1.0.0", type: "module", private: true }));
  npm(["install", "--prefer-offline", join(out, tarball)], project);
  const shown = execFileSync(
    process.execPath,
    ["--input-type=module", "-e", "const m = await import('@errord/client'); console.log([typeof m.Executor, typeof m.ErrordClient, typeof m.toOpenAI].join(' '))"],
    { cwd: project, encoding: "utf8" },
  );
  assert.equal(shown.trim(), "function function function");
  const compat = execFileSync(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      [
        "const service = await import('@errord/client/compat/tool-execution-service');",
        "const middleware = await import('@errord/client/compat/response-validation-middleware');",
        "const spec = await import('@errord/client/compat/tool-execution');",
        "console.log([typeof service.ToolExecutionService, typeof middleware.responseValidationMiddleware, typeof spec.ToolExecutor].join(' '));",
      ].join("\n"),
    ],
    { cwd: project, encoding: "utf8" },
  );
  assert.equal(compat.trim(), "function object function", "the compat subpath exports do not import");
  for (const declared of ["toolExecutionService", "responseValidationMiddleware", "toolExecution"]) {
    assert.ok(existsSync(join(project, `node_modules/@errord/client/dist/compat/${declared}.d.ts`)), `${declared}.d.ts is not shipped`);
  }
  assert.ok(existsSync(join(project, "node_modules/@errord/client/dist/index.d.ts")));
  assert.ok(!existsSync(join(project, "node_modules/@opentelemetry/api")), "the optional peer @opentelemetry/api was installed");
  const ran = execFileSync(process.execPath, ["--input-type=module", "-e", WITHOUT_OPENTELEMETRY], { cwd: project, encoding: "utf8" });
  assert.equal(ran.trim(), "succeeded");
});
