// Turns zod issues into the 400 phrase of CONTRACT section 1: the field and the rule.
import type { z } from "zod";

export function issuePhrase(error: z.ZodError, prefix?: string): string {
  const issue = error.issues[0];
  const path = [prefix, ...issue.path.map(String)].filter(Boolean).join(".");
  if (issue.code === "unrecognized_keys") {
    const where = path ? ` in ${path}` : "";
    return `Unknown field${issue.keys.length > 1 ? "s" : ""}${where}: ${issue.keys.join(", ")}`;
  }
  return path ? `Invalid ${path}: ${issue.message}` : `Invalid request: ${issue.message}`;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; phrase: string };

export function parseWith<S extends z.ZodType>(
  schema: S,
  input: unknown,
  prefix?: string,
): Parsed<z.infer<S>> {
  const result = schema.safeParse(input);
  return result.success
    ? { ok: true, value: result.data }
    : { ok: false, phrase: issuePhrase(result.error, prefix) };
}
