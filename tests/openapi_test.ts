// /openapi.json is a valid OpenAPI 3.1 document generated from the validating schemas.
import assert from "node:assert/strict";
import { Validator } from "@seriousme/openapi-schema-validator";
import { call } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";

/** Every route a client can call; later capabilities add theirs here. */
const EXPECTED_ROUTES: [string, string][] = [
  ["post", "/token"],
  ["get", "/token"],
  ["get", "/recharge"],
  ["get", "/token/logs"],
  ["get", "/kv/{bucket}/{key}"],
  ["post", "/kv/{bucket}/{key}"],
  ["delete", "/kv/{bucket}/{key}"],
  ["get", "/healthz"],
  ["get", "/readyz"],
  ["post", "/payments/webhook"],
  ["get", "/token/settings"],
  ["put", "/token/settings"],
  ["post", "/webhook"],
  ["get", "/webhook"],
  ["delete", "/webhook"],
  ["post", "/webhook/test"],
  ["get", "/webhook/{webhookId}"],
  ["put", "/webhook/{webhookId}"],
  ["patch", "/webhook/{webhookId}"],
  ["delete", "/webhook/{webhookId}"],
  ["post", "/webhook/{webhookId}/test"],
  ["get", "/attachments/{owner}/{id}"],
];

Deno.test("the OpenAPI document", async () => {
  const svc = await startService();
  try {
    const res = await call(svc, "GET", "/openapi.json");
    assert.equal(res.status, 200);
    const doc = res.json();
    assert.equal(doc.openapi, "3.1.0");
    const validator = new Validator();
    const result = await validator.validate(doc);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
    assert.equal(validator.version, "3.1");
    for (const [method, path] of EXPECTED_ROUTES) {
      assert.ok(doc.paths?.[path]?.[method], `${method.toUpperCase()} ${path} is described`);
    }
    const kvParams = doc.paths["/kv/{bucket}/{key}"].get.parameters.map((p: any) => `${p.in}:${p.name}`);
    assert.ok(kvParams.includes("path:bucket") && kvParams.includes("path:key"));
    assert.ok(doc.paths["/token/logs"].get.parameters.some((p: any) => p.name === "n" && p.in === "query"));
  } finally {
    await svc.dispose();
  }
});

Deno.test("every route the service serves is in the document", async () => {
  const svc = await startService();
  try {
    const doc = (await call(svc, "GET", "/openapi.json")).json();
    const described = new Set(
      Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.keys(ops as object).map((m) => `${m} ${path}`)
      ),
    );
    for (const [method, path] of EXPECTED_ROUTES) assert.ok(described.has(`${method} ${path}`));
  } finally {
    await svc.dispose();
  }
});
