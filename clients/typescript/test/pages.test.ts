/** Each adapter page's example runs as the page says (runPageExample): its files saved
 * under their names, errord started by the page's command, its script run by the page's
 * command in a project where `@errord/client` is this package and the framework the
 * package's own copy; it prints what the page shows. */
import { join } from "node:path";
import { test } from "node:test";
import { PACKAGE, runPageExample } from "./helpers.js";

test("docs/ai-sdk.md's example, run as the page says, prints the page's output line by line", async () => {
  await runPageExample(join(PACKAGE, "docs/ai-sdk.md"), "Example", ["ai", "zod"]);
});

test("docs/langchain.md's example, run as the page says, prints the page's output line by line", async () => {
  await runPageExample(join(PACKAGE, "docs/langchain.md"), "Example", ["@langchain/core", "zod"]);
});
