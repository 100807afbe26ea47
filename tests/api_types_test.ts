// The dashboard's calls are typed from the served document: the committed types are exactly what
// openapi-typescript makes of the live /openapi.json, and the page's script type-checks against them
// (a call the document does not describe would not).
import assert from "node:assert/strict";
import { inProcessService } from "./helpers/in_process.ts";
import { API_TYPES_FILE, apiTypesOf } from "../src/tasks/api_types.ts";

const ROOT = new URL("../", import.meta.url);
const DASHBOARD = new URL("../src/http/dashboard/", import.meta.url);

async function denoCheck(file: URL) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["check", "--config", new URL("deno.json", ROOT).pathname, file.pathname],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    output: new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr),
  };
}

Deno.test("the committed API types are what openapi-typescript makes of the served /openapi.json", async () => {
  const svc = await inProcessService();
  try {
    const res = await svc.request("GET", "/openapi.json");
    assert.equal(res.status, 200);
    const generated = await apiTypesOf(JSON.parse(res.text));
    const committed = await Deno.readTextFile(API_TYPES_FILE);
    assert.ok(generated.includes('"/token/ledger": {') && generated.includes('"/token/usage": {'));
    assert.ok(generated === committed, "src/http/dashboard/api_types.ts is stale: run `deno task api-types`");
  } finally {
    await svc.close();
  }
});

Deno.test("the dashboard's script type-checks against the generated types, and a wrong call does not", async () => {
  const checked = await denoCheck(new URL("main.js", DASHBOARD));
  assert.equal(checked.code, 0, checked.output);

  // The page's own client type, used from a file of its own: the right call passes, wrong ones fail.
  const dir = await Deno.makeTempDir({ prefix: "dashboard-check-" });
  const withCall = async (name: string, call: string) => {
    const file = new URL(`file://${dir}/${name}.js`);
    await Deno.writeTextFile(
      file,
      `// @ts-check
/// <reference lib="dom" />
/** @type {import("${new URL("api.js", DASHBOARD)}").ApiClient} */
const client = /** @type {any} */ (null);
await client.${call};
`,
    );
    return await denoCheck(file);
  };
  try {
    const right = await withCall("right", `GET("/token/ledger", { params: { query: { limit: "5" } } })`);
    assert.equal(right.code, 0, right.output);
    const numberLimit = await withCall("number", `GET("/token/ledger", { params: { query: { limit: 5 } } })`);
    assert.notEqual(numberLimit.code, 0);
    assert.match(numberLimit.output, /Type 'number' is not assignable to type 'string'/);
    const unknownPath = await withCall("path", `GET("/token/balance", {})`);
    assert.notEqual(unknownPath.code, 0, "a path the document does not have");
    const unknownField = await withCall("field", `GET("/token/usage").then(({ data }) => data?.dayz)`);
    assert.notEqual(unknownField.code, 0, "a field the document does not have");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
