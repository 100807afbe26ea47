// /openapi.json is a valid OpenAPI 3.1 document generated from the validating schemas, and it
// describes exactly the routes the app serves.
import assert from "node:assert/strict";
import { Validator } from "@seriousme/openapi-schema-validator";
import { call } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";
import { inProcessService } from "./helpers/in_process.ts";
import { MIN_TOKEN_LENGTH } from "../src/http/middleware.ts";
import { WEBHOOK_ID_PATTERN } from "../src/webhooks/config/input.ts";

/** Every route a client can call; later capabilities add theirs here. */
const EXPECTED_ROUTES: [string, string][] = [
  ["post", "/token"],
  ["get", "/token"],
  ["get", "/recharge"],
  ["get", "/token/logs"],
  ["get", "/token/ledger"],
  ["get", "/token/usage"],
  ["get", "/kv/{bucket}/{key}"],
  ["post", "/kv/{bucket}/{key}"],
  ["delete", "/kv/{bucket}/{key}"],
  ["get", "/kv/{bucket}"],
  ["post", "/kv/{bucket}/{key}/incr"],
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
  ["get", "/webhook/{webhookId}/deliveries"],
  ["get", "/webhook/{webhookId}/deliveries/{deliveryId}"],
  ["post", "/webhook/{webhookId}/deliveries/{deliveryId}/retry"],
  ["post", "/webhook/{webhookId}/recover"],
  ["get", "/attachments/{owner}/{id}"],
  ["post", "/token/keys"],
  ["get", "/token/keys"],
  ["delete", "/token/keys/{id}"],
  ["post", "/mcp"],
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
    const named = (operation: any) => operation.parameters.map((p: any) => `${p.in}:${p.name}`);
    assert.ok(doc.paths["/kv/{bucket}/{key}"].get.responses["200"].headers.ETag, "GET documents its ETag");
    for (const operation of [doc.paths["/kv/{bucket}/{key}"].post, doc.paths["/kv/{bucket}/{key}"].delete]) {
      assert.ok(
        named(operation).includes("header:if-match") && named(operation).includes("header:if-none-match"),
      );
      assert.ok(operation.responses["412"], "412 Precondition Failed is documented");
    }
    const list = named(doc.paths["/kv/{bucket}"].get);
    for (const param of ["path:bucket", "query:prefix", "query:limit", "query:cursor"]) {
      assert.ok(list.includes(param));
    }
    assert.ok(named(doc.paths["/kv/{bucket}/{key}/incr"].post).includes("query:by"));
  } finally {
    await svc.dispose();
  }
});

const HTTP_METHODS = new Set(["get", "put", "post", "delete", "options", "head", "patch", "trace"]);

/**
 * `method /path/{param}` of every route the app serves itself. Left out: middleware (method ALL),
 * catch-alls (a `*` in the path, such as `/kv/*`, which only answer requests no declared route
 * takes, with an error) and the document's own route.
 */
function servedRoutes(routes: { method: string; path: string }[]): string[] {
  const served = routes
    .filter((route) => route.method !== "ALL" && !route.path.includes("*") && route.path !== "/openapi.json")
    .map((route) => `${route.method.toLowerCase()} ${route.path.replace(/:([A-Za-z0-9_]+)/g, "{$1}")}`);
  return [...new Set(served)].sort();
}

function describedRoutes(doc: any): string[] {
  return Object.entries(doc.paths as Record<string, object>)
    .flatMap(([path, item]) =>
      Object.keys(item).filter((key) => HTTP_METHODS.has(key)).map((m) => `${m} ${path}`)
    )
    .sort();
}

Deno.test("the document describes exactly the routes the app serves, both ways", async () => {
  const svc = await inProcessService();
  try {
    const res = await svc.request("GET", "/openapi.json");
    assert.equal(res.status, 200);
    const doc = JSON.parse(res.text);
    const served = servedRoutes(svc.app.routes);
    const described = describedRoutes(doc);
    assert.deepEqual(served.filter((route) => !described.includes(route)), [], "served but not described");
    assert.deepEqual(described.filter((route) => !served.includes(route)), [], "described but not served");
    for (const [method, path] of EXPECTED_ROUTES) assert.ok(served.includes(`${method} ${path}`));
  } finally {
    await svc.close();
  }
});

Deno.test("shared rules are documented from their one definition: security and webhookId", async () => {
  const svc = await inProcessService();
  try {
    const doc = JSON.parse((await svc.request("GET", "/openapi.json")).text);
    const operations = Object.values(doc.paths as Record<string, Record<string, any>>)
      .flatMap((item) => Object.values(item));
    const parameters = operations.flatMap((operation) => operation.parameters ?? []);
    const webhookIds = parameters.filter((p: any) => p.in === "path" && p.name === "webhookId");
    assert.ok(webhookIds.length >= 5);
    for (const webhookId of webhookIds) assert.equal(webhookId.schema.pattern, WEBHOOK_ID_PATTERN.source);
    // X-Token is the security scheme, no longer a parameter of each operation.
    assert.deepEqual(parameters.filter((p: any) => p.in === "header" && /^x-token$/i.test(p.name)), []);
    assert.deepEqual(doc.components.securitySchemes.token, {
      type: "apiKey",
      in: "header",
      name: "X-Token",
      description: doc.components.securitySchemes.token.description,
    });
    assert.match(doc.components.securitySchemes.token.description, new RegExp(`${MIN_TOKEN_LENGTH} to 256`));
    assert.ok(doc.servers?.length === 1 && doc.servers[0].url.startsWith("http"));
    const ids = operations.map((operation) => operation.operationId);
    assert.equal(new Set(ids).size, operations.length, "every operation has its own operationId");
    assert.ok(ids.every((id) => /^[a-z][A-Za-z]+$/.test(id)), ids.join(" "));
  } finally {
    await svc.close();
  }
});

Deno.test("a body a route needs is required, and a 401 documents its WWW-Authenticate", async () => {
  // Twice in one process: the declared routes are shared, and the second app must document the same.
  for (let round = 0; round < 2; round++) {
    const svc = await inProcessService();
    try {
      const doc = JSON.parse((await svc.request("GET", "/openapi.json")).text);
      const optional: string[] = [];
      for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
        for (const [method, operation] of Object.entries(item)) {
          if (operation.requestBody && operation.requestBody.required !== true) {
            optional.push(`${method} ${path}`);
          }
          const unauthorized = operation.responses["401"];
          if (unauthorized) {
            assert.ok(unauthorized.headers?.["WWW-Authenticate"]?.required, `${method} ${path}`);
          }
        }
      }
      // Only a KV value may be empty, so sent without a body.
      assert.deepEqual(optional, ["post /kv/{bucket}/{key}"]);
      // A batch to POST /mcp is answered an array, and the document says so.
      const mcpAnswer = doc.paths["/mcp"].post.responses["200"].content["application/json"].schema;
      assert.ok(mcpAnswer.anyOf?.some((choice: any) => choice.type === "array"), JSON.stringify(mcpAnswer));
    } finally {
      await svc.close();
    }
  }
});

/** Public routes: everything else needs X-Token (and /mcp also takes a bearer token). */
const PUBLIC = new Set([
  "post /token",
  "get /healthz",
  "get /readyz",
  "post /payments/webhook",
  "get /attachments/{owner}/{id}",
  "get /",
  "get /dashboard/{file}",
  "get /alerts/confirm",
  "post /alerts/confirm",
]);

Deno.test("security on every operation, and the headers each answer carries", async () => {
  const svc = await inProcessService();
  try {
    const doc = JSON.parse((await svc.request("GET", "/openapi.json")).text);
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, operation] of Object.entries(item)) {
        const name = `${method} ${path}`;
        const expected = PUBLIC.has(name)
          ? []
          : name === "post /mcp"
          ? [{ token: [] }, { bearer: [] }]
          : [{ token: [] }];
        assert.deepEqual(operation.security, expected, name);
        for (const [status, response] of Object.entries(operation.responses as Record<string, any>)) {
          assert.deepEqual(response.headers?.["X-Request-Id"], { $ref: "#/components/headers/RequestId" });
          const billed = !PUBLIC.has(name) && name !== "post /mcp" &&
            !["401", "405", "503"].includes(status);
          assert.equal(
            Boolean(response.headers["X-Balance"] && response.headers["X-Cost"]),
            billed,
            `${name} ${status}`,
          );
          if (status === "200" && billed) assert.equal(response.headers["X-Balance"].required, true);
          // Every 429 and 503 says when to come back, but that of payments switched off.
          if (status === "429" || (status === "503" && name !== "post /payments/webhook")) {
            assert.equal(response.headers["Retry-After"]?.required, true, `${name} ${status}`);
          }
        }
      }
    }
  } finally {
    await svc.close();
  }
});

Deno.test("every billed write documents Idempotency-Key with the rule the service checks, and 408 beside 413", async () => {
  const svc = await inProcessService();
  try {
    const doc = JSON.parse((await svc.request("GET", "/openapi.json")).text);
    let pattern: RegExp | undefined;
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, operation] of Object.entries(item)) {
        const name = `${method} ${path}`;
        const write = ["post", "put", "patch", "delete"].includes(method);
        const takesKey = write && !PUBLIC.has(name) && name !== "post /mcp";
        // A route that reads a body documents both ways it can be refused.
        if (operation.responses["413"]) assert.ok(operation.responses["408"], `${name} 408`);
        const parameter = (operation.parameters ?? []).find((p: any) => p.name === "idempotency-key");
        assert.equal(Boolean(parameter), takesKey, name);
        if (!parameter) continue;
        assert.deepEqual([parameter.in, parameter.required ?? false], ["header", false], name);
        pattern = new RegExp(parameter.schema.pattern);
        for (const [status, response] of Object.entries(operation.responses as Record<string, any>)) {
          const billed = !["401", "405", "503"].includes(status);
          assert.equal(Boolean(response.headers["Idempotent-Replayed"]), billed, `${name} ${status}`);
        }
      }
    }
    // The documented pattern accepts exactly the keys the service takes.
    const token = await svc.newToken();
    const keys = ["a", "k".repeat(64), "a b~!", "k".repeat(65), "tab\there", "é"];
    for (const [i, key] of keys.entries()) {
      const res = await svc.request("POST", `/kv/idem/doc-${i}`, {
        token,
        body: "v",
        headers: { "idempotency-key": key },
      });
      assert.equal(res.status, pattern!.test(key) ? 200 : 400, `${JSON.stringify(key)}: ${res.text}`);
    }
  } finally {
    await svc.close();
  }
});
