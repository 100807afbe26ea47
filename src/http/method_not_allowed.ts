// A known path with a method it does not serve answers 405 with Allow, not 404. A path is known when
// a route matches it exactly as the router does: `/webhook/` is not `/webhook` (Hono routes
// strictly), so it is a 404 like any unknown path, and a 405 never lists the method it refuses.
import type { Context } from "hono";
import type { AppEnv } from "./env.ts";
import { errorResponse } from "./errors.ts";

interface KnownPath {
  pattern: RegExp;
  methods: Set<string>;
}

/** The route path as a regular expression: `:name` is one segment, `*` anything. */
function patternOf(path: string): string {
  const segments = path.split("/").map((segment) =>
    segment === "*"
      ? ".*"
      : segment.startsWith(":")
      ? "[^/]+"
      : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  );
  return `^${segments.join("/")}$`;
}

export function methodNotAllowed(routes: { method: string; path: string }[]) {
  const byPattern = new Map<string, KnownPath>();
  for (const route of routes) {
    if (route.method === "ALL") continue;
    const source = patternOf(route.path);
    const known = byPattern.get(source) ?? { pattern: new RegExp(source), methods: new Set() };
    known.methods.add(route.method.toUpperCase());
    if (known.methods.has("GET")) known.methods.add("HEAD");
    byPattern.set(source, known);
  }
  return (c: Context<AppEnv>): Response => {
    const path = new URL(c.req.url).pathname;
    const allowed = new Set<string>();
    for (const known of byPattern.values()) {
      if (known.pattern.test(path)) known.methods.forEach((m) => allowed.add(m));
    }
    // A route with this method matched here but the router still found nothing (a parameter's own
    // rule refused the segment): the path is unknown for it, and Allow must not offer the method.
    if (allowed.size === 0 || allowed.has(c.req.method)) return errorResponse(c, 404, "Not Found");
    return errorResponse(c, 405, "Method Not Allowed", { allow: [...allowed].sort().join(", ") });
  };
}
