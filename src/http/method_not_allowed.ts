// A known path with a method it does not serve answers 405 with Allow, not 404.
import type { Context } from "hono";
import type { AppEnv } from "./env.ts";
import { errorResponse } from "./errors.ts";

interface KnownPath {
  pattern: RegExp;
  methods: Set<string>;
}

export function methodNotAllowed(routes: { method: string; path: string }[]) {
  const byPattern = new Map<string, KnownPath>();
  for (const route of routes) {
    if (route.method === "ALL") continue;
    const source = "^" + route.path.replace(/[.+?^$()[\]\\]/g, "\\$&").replace(/\/:[^/]+/g, "/[^/]+") + "/?$";
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
    if (allowed.size === 0) return errorResponse(c, 404, "Not Found");
    return errorResponse(c, 405, "Method Not Allowed", { allow: [...allowed].sort().join(", ") });
  };
}
