// JSON request bodies parsed by the handlers themselves (any content type, so `curl -d` works),
// checked against the same zod schemas the OpenAPI document shows, after a check that every string
// in them, names included, can be stored (JSON escapes can spell "\u0000" and "\ud800").
import type { Context } from "hono";
import { z as zod } from "zod";
import type { AppEnv } from "./env.ts";
import { type Parsed, parseWith, unstorablePhrase } from "../parsed.ts";
import { readTextBody } from "./body.ts";

/** Webhook and settings configurations: far above any valid one. */
export const MAX_JSON_BODY_BYTES = 256 * 1024;

/** The body as the schema's value, or the 400 phrase. */
export async function readJsonBody<S extends zod.ZodType>(
  c: Context<AppEnv>,
  schema: S,
): Promise<Parsed<zod.infer<S>>> {
  // Over the limit (413) or not UTF-8 (400) throws: the app answers it like any refused input.
  const text = await readTextBody(c, MAX_JSON_BODY_BYTES);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false as const, phrase: "Invalid request: body must be a JSON object" };
  }
  // Before the schema, so the phrase is the same whichever field holds it, unknown ones included.
  const unstorable = unstorablePhrase(value);
  if (unstorable !== undefined) return { ok: false as const, phrase: unstorable };
  return parseWith(schema, value);
}

/**
 * A request body for the OpenAPI document, as plain JSON Schema generated from the zod schema:
 * the handler validates it, not the route's validator.
 */
export function documentedJson(schema: zod.ZodType, description: string) {
  const { $schema: _, ...jsonSchema } = zod.toJSONSchema(schema, { io: "input", unrepresentable: "any" });
  return { description, content: { "application/json": { schema: jsonSchema as Record<string, unknown> } } };
}
