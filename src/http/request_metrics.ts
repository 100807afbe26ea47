// The request families' reading of an answered request: the route TEMPLATE Hono matched (never the
// path the client sent, so the series stay bounded), the method, the status and the time taken.
import type { Context } from "hono";
import { matchedRoutes } from "hono/route";
import type { AppEnv } from "./env.ts";
import { recordRequest } from "../metrics/http_metrics.ts";
import { metricsOn } from "../metrics/registry.ts";

/**
 * The template of the route whose handler ran last (the one that answered, or the middleware that
 * refused); undefined when only the catch-all middleware ran (no route matched).
 */
export function routeTemplateOf(c: Context<AppEnv>): string | undefined {
  const path = matchedRoutes(c)[c.req.routeIndex]?.path;
  return path === undefined || path === "*" || path === "/*" ? undefined : path;
}

/** Counts the answered request (a no-op while metrics are off). */
export function countAnswer(c: Context<AppEnv>): void {
  if (!metricsOn()) return;
  recordRequest({
    route: routeTemplateOf(c),
    method: c.req.method,
    status: c.res.status,
    seconds: (performance.now() - c.get("startedAt")) / 1000,
  });
}
