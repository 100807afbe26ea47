// Every operation accepts the requests the document calls valid: for each one, requests are drawn from
// the document alone by a seeded generator (tests/helpers/schema_sampler.ts): the smallest one (its
// examples), then varied ones (optional fields and parameters present or absent, each enum value and
// union branch in turn, strings at their boundary lengths, several maps' entries, times around now),
// each sent through Prism, which names it in `sl-violations` if the document does not call it valid.
// The service must answer no 400 that the document does not explain: a 400 is explained only where a
// description on the way to the field it names states the rule (a time-relative rule, an opaque cursor,
// cron syntax). State may still say 402, 404 or 409; a 422 only for an Idempotency-Key sent before.
import assert from "node:assert/strict";
import { call, newToken, nextClientIp } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";
import { startPrism } from "./helpers/openapi_check.ts";
import { buyCredits, TEST_PAYMENT_SECRET } from "./helpers/credits.ts";
import { type Draw, SchemaSampler, seededRandom } from "./helpers/schema_sampler.ts";

// deno-lint-ignore no-explicit-any
type Schema = any;

const METHODS = ["get", "put", "post", "delete", "patch"];
/** Valid only with what the document cannot hold: a fresh signature, a signed link. */
const NEEDS_SECRETS = new Set(["post /payments/webhook", "get /attachments/{owner}/{id}"]);
/** Requests drawn per operation past the smallest one: enough to walk a webhook format's 7 values. */
const VARIANTS = 7;
const SEED = Number(Deno.env.get("OPENAPI_SEED") ?? 24);

interface Built {
  name: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

/** The request an operation is sent in `draw`'s variant; variant 0 sends only what has an example. */
function build(
  target: { path: string; method: string; operation: Schema; token: string },
  sampler: SchemaSampler,
  draw: Draw,
): Built {
  const { path, method, operation, token } = target;
  const name = `${method} ${path} #${draw.variant}`;
  let url = path;
  const query = new URLSearchParams();
  const headers: Record<string, string> = { "x-token": token, "x-forwarded-for": nextClientIp() };
  for (const parameter of operation.parameters ?? []) {
    const example = parameter.schema.example ?? parameter.example;
    if (draw.variant === 0 && example === undefined) {
      assert.ok(!parameter.required, `${name}: the required ${parameter.name} has an example`);
      continue;
    }
    const sent = parameter.required || draw.variant === 0 || draw.variant % 2 === 1 || draw.random() < 0.5;
    if (!sent) continue;
    // A path segment is never empty: the route would be another one.
    const schema = parameter.in === "path" ? { minLength: 1, ...parameter.schema } : parameter.schema;
    const value = String(sampler.value(schema, draw, `${name} ${parameter.name}`));
    if (parameter.in === "path") url = url.replace(`{${parameter.name}}`, encodeURIComponent(value));
    if (parameter.in === "query") query.set(parameter.name, value);
    if (parameter.in === "header") headers[parameter.name] = value;
  }
  const content = operation.requestBody?.content ?? {};
  const types = ["application/json", "text/plain", "application/x-www-form-urlencoded"].filter((t) =>
    content[t]
  );
  let body: string | undefined;
  if (types.length) {
    const type = types[draw.variant % types.length];
    const value = sampler.value(content[type].schema, draw, `${name} body`);
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

/** The field a 400 phrase names: `Invalid schedule.cron "x": ...` names schedule.cron. */
function fieldOf(phrase: string): string[] | undefined {
  const named = /^Invalid ([^\s:"]+)/.exec(phrase)?.[1];
  return named === undefined || named === "request" ? undefined : named.split(".");
}

/**
 * The descriptions on the way to a field: the operation's, the body's and each object's down to the
 * field's own (through $refs and union branches), or a parameter's.
 */
function descriptionsOf(operation: Schema, field: string[], components: Record<string, Schema>): string[] {
  const resolve = (schema: Schema): Schema =>
    schema?.$ref ? resolve(components[schema.$ref.split("/").pop()]) : schema;
  const found: string[] = [operation.summary ?? "", operation.description ?? ""];
  const parameter = (operation.parameters ?? []).find((p: Schema) =>
    p.name.toLowerCase() === field[0].toLowerCase()
  );
  if (parameter) return [...found, parameter.description ?? "", parameter.schema?.description ?? ""];
  const bodies = Object.values(operation.requestBody?.content ?? {}) as Schema[];
  let level: Schema[] = bodies.map((body) => body.schema);
  for (const step of ["", ...field]) {
    const schemas: Schema[] = [];
    const visit = (given: Schema) => {
      const schema = resolve(given);
      if (!schema || typeof schema !== "object") return;
      schemas.push(schema);
      for (const part of [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])]) {
        visit(part);
      }
    };
    level.forEach(visit);
    found.push(...schemas.map((schema) => schema.description ?? ""));
    if (step === field.at(-1) && step !== "") break;
    const next = field[field.indexOf(step) + 1];
    level = schemas.flatMap((schema) =>
      next === undefined ? [] : [schema.properties?.[next], schema.additionalProperties].filter(Boolean)
    );
  }
  return found;
}

/** Whether the document explains a 400: a description on the way states a 400, or names the field. */
function explained(operation: Schema, phrase: string, components: Record<string, Schema>): boolean {
  const field = fieldOf(phrase);
  if (!field) return false;
  const leaf = field.at(-1)!;
  return descriptionsOf(operation, field, components).some((text) =>
    /\b400\b|refused/.test(text) || new RegExp(`\\b${leaf.replace(/[^\w-]/g, "")}\\b`).test(text)
  );
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

/** Creating calls first (so reads find something), deleting ones last, and the wallet's own erasure at the end. */
function order(path: string, method: string): number {
  if (path === "/token" && method === "delete") return 3;
  return method === "post" ? 0 : method === "delete" ? 2 : 1;
}

Deno.test("every operation accepts the varied requests the document calls valid", async () => {
  const service = await startService({ env: { PAYMENT_WEBHOOK_SECRET: TEST_PAYMENT_SECRET } });
  const dir = await Deno.makeTempDir({ prefix: "openapi-requests-" });
  try {
    const document = (await call(service, "GET", "/openapi.json")).json();
    await Deno.writeTextFile(`${dir}/openapi.json`, JSON.stringify(document));
    const prism = await startPrism(`${dir}/openapi.json`, service.url);
    const token = await newToken(service);
    // Enough credits that no drawn request is answered 402 before its input is judged.
    await buyCredits(service, token);
    const sampler = new SchemaSampler(document);
    const components = document.components?.schemas ?? {};
    const operations = Object.entries(document.paths as Record<string, any>)
      .flatMap(([path, item]) => METHODS.filter((m) => item[m]).map((m) => [path, m, item[m]] as const))
      .filter(([path, method]) => !NEEDS_SECRETS.has(`${method} ${path}`))
      .sort((a, b) => order(a[0], a[1]) - order(b[0], b[1]));
    const refused: string[] = [];
    const explainedOnes: string[] = [];
    const smallestAnswers: number[] = [];
    const keysSent = new Set<string>();
    let sent = 0;
    try {
      // Prism vouches for the requests: it names what is wrong with one the document calls invalid.
      const invalid = await fetch(`${prism.url}/token/logs?n=101`, { headers: { "x-token": token } });
      await invalid.body?.cancel();
      assert.match(requestViolations(invalid).join("\n"), /query.*n|n.*pattern/i);
      for (const [index, [path, method, operation]] of operations.entries()) {
        for (let variant = 0; variant <= VARIANTS; variant++) {
          const draw = { variant, random: seededRandom(SEED * 1000 + index * 16 + variant) };
          const request = build({ path, method, operation, token }, sampler, draw);
          const res = await fetch(prism.url + request.path, {
            method: method.toUpperCase(),
            headers: request.headers,
            body: request.body,
          });
          const text = await res.text();
          sent++;
          if (variant === 0) smallestAnswers.push(res.status);
          const violations = requestViolations(res);
          const shown = `${request.name} (seed ${SEED}) ${request.path} ${request.body?.slice(0, 300) ?? ""}`;
          if (violations.length) refused.push(`${shown}: the document calls it invalid: ${violations}`);
          const key = request.headers["idempotency-key"];
          const reusedKey = key !== undefined && keysSent.has(key);
          if (key !== undefined) keysSent.add(key);
          if (res.status === 400 && explained(operation, text, components)) {
            explainedOnes.push(`${request.name}: ${text.slice(0, 120)}`);
          } else if (res.status === 400 || (res.status === 422 && !reusedKey)) {
            refused.push(`${shown} -> ${res.status}: ${text.slice(0, 300)}`);
          }
        }
      }
    } finally {
      await prism.stop();
    }
    console.log(
      `${sent} requests to ${operations.length} operations; ${explainedOnes.length} 400s the document ` +
        `explains:\n  ${explainedOnes.join("\n  ")}\ndrawn as the smallest instead: ${
          sampler.fellBack.join(", ")
        }`,
    );
    assert.ok(operations.length >= 30, `${operations.length} operations`);
    assert.deepEqual(refused, [], "requests the document calls valid were refused");
    // The generator must vary: most drawn values are drawn, not the smallest one again.
    assert.ok(sampler.fellBack.length < sent / 10, `${sampler.fellBack.length} values fell back`);
    const succeeded = smallestAnswers.filter((status) => status < 300).length;
    assert.ok(succeeded >= operations.length * 0.6, `${succeeded} of ${operations.length} succeeded`);
  } finally {
    await service.dispose();
    await Deno.remove(dir, { recursive: true });
  }
});
