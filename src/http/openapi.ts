// Shared pieces of the route declarations that /openapi.json is generated from.
import { z } from "@hono/zod-openapi";
import { MAX_TOKEN_LENGTH, MIN_TOKEN_LENGTH } from "./middleware.ts";

// Only the lower bound is a schema rule: requireWallet refuses any other length with 401 before the
// route's validation runs. It checks the trimmed token, so a maximum on the raw header could refuse
// a token it accepts.
export const TokenHeader = z.object({
  "x-token": z.string().min(MIN_TOKEN_LENGTH).optional().openapi({
    description: `Wallet token, or a scoped key (\`k_...\`) where keys are allowed; ` +
      `${MIN_TOKEN_LENGTH} to ${MAX_TOKEN_LENGTH} characters`,
  }),
});

const text = (description: string) => ({
  description,
  content: { "text/plain": { schema: z.string() } },
});

export const ERROR_RESPONSES = {
  400: text("Invalid parameters or request: a phrase naming the field and the rule"),
  401: text("Missing or invalid X-Token: `Unauthorized`"),
  402: text("Balance below the call's cost: `Insufficient credits`"),
  405: text("Method not allowed on this path"),
  422: text("Idempotency-Key reused with a different request"),
  503: text(
    "The database cannot be reached (with `Retry-After`): `Database unavailable, nothing was changed: retry " +
      "shortly`, or `Database unavailable, outcome unknown: retry with the same Idempotency-Key`",
  ),
} as const;

export function textOk(description: string) {
  return { 200: text(description) };
}

export function jsonOk<S extends z.ZodType>(description: string, schema: S) {
  return { 200: { description, content: { "application/json": { schema } } } };
}

export { text as textResponse };

export const BILLING_NOTE =
  "Billed: the answer carries X-Balance and X-Cost, also on errors after authentication.";

import type { OpenAPIHono, RouteConfig, RouteHandler } from "@hono/zod-openapi";
import type { AppEnv } from "./env.ts";

export type RouteContext<R extends RouteConfig> = Parameters<RouteHandler<R, AppEnv>>[0];

/**
 * Registers a declared route. Handlers answer plain Responses (billing headers, problem JSON),
 * so the typed-response check of zod-openapi is relaxed here, once, instead of in every route.
 */
export function serve<R extends RouteConfig>(
  app: OpenAPIHono<AppEnv>,
  route: R,
  handler: (c: RouteContext<R>) => Response | Promise<Response>,
) {
  app.openapi(route, handler as unknown as RouteHandler<R, AppEnv>);
}
