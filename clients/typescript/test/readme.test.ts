/** The README's "A complete example" runs as written: its manifests saved under the name
 * the README gives, errord started by the README's own `errord serve` command (on a free
 * port), its script saved under its name in a project where `@errord/client` is this
 * package, and run by the README's own command: it prints what the README shows (a `...`
 * in the README stands for any text). */
import { join } from "node:path";
import { test } from "node:test";
import { PACKAGE, runPageExample } from "./helpers.js";

test("the README's complete example, run as the README says, prints the README's output line by line", async () => {
  await runPageExample(join(PACKAGE, "README.md"), "A complete example");
});
