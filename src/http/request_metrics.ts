// The request families' reading of an answered request: the route TEMPLATE Hono matched (never the
// path the client sent, so the series stay bounded), the method, the status and the time taken.
import type { Context } from "hono";
import { matchedRoutes } from "hono/route";
import type { AppEnv } from "./env.ts";
import { recordRequest } from "../metrics/http_metrics.ts";
import { metricsOn } from "../metrics/registry.ts";

/** The template of the route that answered: the last matched handler of a method, else a pattern. */
export function routeTemplateOf(c: Context<AppEnv>): string | undefined {
  const routes = matchedRoutes(c);
  let pattern: string | undefined;
  for (let i = routes.length - 1; i >= 0; i--) {
    const route = routes[i];
    if (route.method !== "ALL") return route.path;
    if (pattern === undefined && route.path !== "*" && route.path !== "/*") pattern = route.path;
  }
  return pattern;
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
