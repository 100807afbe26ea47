// Every operation accepts the requests the document calls valid: for each one, a request is built from
// the document alone (its examples, else the smallest value its schema allows) and sent through Prism,
// which names it in `sl-violations` if the document does not call it valid; the service must not
// answer 400 or 422. State may still say 402, 404 or 409.
import assert from "node:assert/strict";
import { call, newToken, nextClientIp } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";
import { startPrism } from "./helpers/openapi_check.ts";

const METHODS = ["get", "put", "post", "delete", "patch"];
/** Valid only with what the document cannot hold: a fresh signature, a signed link. */
const NEEDS_SECRETS = new Set(["post /payments/webhook", "get /attachments/{owner}/{id}"]);

/** A value the schema calls valid: its example, else the smallest one. */
function sample(schema: any, components: any): unknown {
  if (schema.$ref) return sample(components.schemas[schema.$ref.split("/").pop()], components);
  if (schema.example !== undefined) return schema.example;
  if (schema.examples?.length) return schema.examples[0];
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  // An object with its own properties is sampled from them: its combinators then only state rules
  // across fields (a webhook's mailbox or schedule), which the smallest object keeps.
  const own = schema.properties !== undefined;
  for (const choice of ["anyOf", "oneOf"]) {
    if (schema[choice] && !own) return sample(schema[choice][0], components);
  }
  if (schema.allOf && !own) {
    return Object.assign(
      {},
      ...schema.allOf.map((part: any) => sample(part, components)),
    );
  }
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (type === "object") {
    const properties = Object.entries(schema.properties ?? {}) as [string, any][];
    const wanted = properties.filter(([name, property]) =>
      schema.required?.includes(name) || property.example !== undefined
    );
    return Object.fromEntries(wanted.map(([name, property]) => [name, sample(property, components)]));
  }
  if (type === "array") {
    return Array.from({ length: schema.minItems ?? 0 }, () => sample(schema.items, components));
  }
  if (type === "integer" || type === "number") return schema.minimum ?? 0;
  if (type === "boolean") return false;
  if (schema.format === "date-time") return new Date(Date.now() - 3600_000).toISOString();
  if (type === "string") return "a".repeat(schema.minLength ?? 0);
  return {};
}

interface Built {
  name: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

function build(path: string, method: string, operation: any, components: any, token: string): Built {
  const name = `${method} ${path}`;
  let url = path;
  const query = new URLSearchParams();
  const headers: Record<string, string> = { "x-token": token, "x-forwarded-for": nextClientIp() };
  for (const parameter of operation.parameters ?? []) {
    const example = parameter.schema.example ?? parameter.example;
    if (example === undefined) {
      assert.ok(!parameter.required, `${name}: the required ${parameter.name} has an example`);
      continue;
    }
    if (parameter.in === "path") url = url.replace(`{${parameter.name}}`, encodeURIComponent(example));
    if (parameter.in === "query") query.set(parameter.name, String(example));
    if (parameter.in === "header") headers[parameter.name] = String(example);
  }
  const content = operation.requestBody?.content ?? {};
  const type = ["application/json", "text/plain", "application/x-www-form-urlencoded"].find((t) =>
    content[t]
  );
  let body: string | undefined;
  if (type) {
    const value = sample(content[type].schema, components);
    headers["content-type"] = type;
    body = type === "application/json"
      ? JSON.stringify(value)
      : type === "text/plain"
      ? String(value)
      : new URLSearchParams(value as Record<string, string>).toString();
  }
  if (path === "/mcp") headers.accept = "application/json, text/event-stream";
  return { name, path: `${url}${query.size ? `?${query}` : ""}`, headers, body };
}

/** What Prism found wrong with the request, from its `sl-violations` header. */
function requestViolations(res: Response): string[] {
  const violations = JSON.parse(res.headers.get("sl-violations") ?? "[]") as {
    location: string[];
    message: string;
  }[];
  return violations.filter((v) => v.location[0] === "request").map((v) =>
    `${v.location.join(".")}: ${v.message}`
  );
}

/** Creating calls first (so reads find something), deleting ones last. */
function order(method: string): number {
  return method === "post" ? 0 : method === "delete" ? 2 : 1;
}

Deno.test("every operation accepts the requests the document calls valid", async () => {
  const service = await startService();
  const dir = await Deno.makeTempDir({ prefix: "openapi-requests-" });
  try {
    const document = (await call(service, "GET", "/openapi.json")).json();
    await Deno.writeTextFile(`${dir}/openapi.json`, JSON.stringify(document));
    const prism = await startPrism(`${dir}/openapi.json`, service.url);
    const token = await newToken(service);
    const operations = Object.entries(document.paths as Record<string, any>)
      .flatMap(([path, item]) => METHODS.filter((m) => item[m]).map((m) => [path, m, item[m]] as const))
      .filter(([path, method]) => !NEEDS_SECRETS.has(`${method} ${path}`))
      .sort((a, b) => order(a[1]) - order(b[1]));
    const refused: string[] = [];
    const answered: number[] = [];
    try {
      // Prism vouches for the requests: it names what is wrong with one the document calls invalid.
      const invalid = await fetch(`${prism.url}/token/logs?n=101`, { headers: { "x-token": token } });
      await invalid.body?.cancel();
      assert.match(requestViolations(invalid).join("\n"), /query.*n|n.*pattern/i);
      for (const [path, method, operation] of operations) {
        const request = build(path, method, operation, document.components, token);
        const res = await fetch(prism.url + request.path, {
          method: method.toUpperCase(),
          headers: request.headers,
          body: request.body,
        });
        const text = await res.text();
        answered.push(res.status);
        const violations = requestViolations(res);
        if (violations.length) refused.push(`${request.name}: the document calls it invalid: ${violations}`);
        if (res.status === 400 || res.status === 422) {
          refused.push(`${request.name} (${request.path}) -> ${res.status}: ${text.slice(0, 300)}`);
        }
      }
    } finally {
      await prism.stop();
    }
    assert.ok(operations.length >= 30, `${operations.length} operations`);
    assert.deepEqual(refused, [], "requests the document calls valid were refused");
    const succeeded = answered.filter((status) => status < 300).length;
    assert.ok(succeeded >= operations.length * 0.6, `${succeeded} of ${operations.length} succeeded`);
  } finally {
    await service.dispose();
    await Deno.remove(dir, { recursive: true });
  }
});
