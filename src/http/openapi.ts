// Shared pieces of the route declarations that /openapi.json is generated from: the answers every
// route shares, and how a route says who may call it (publicRoute, billedRoute), which also puts on
// its answers the headers the middleware sends: X-Request-Id and X-Service-Request-Id always, X-Balance
// and X-Cost once billed.
import { createRoute, type OpenAPIHono, type RouteConfig, type RouteHandler, z } from "@hono/zod-openapi";
import type { AppEnv } from "./env.ts";
import { MAX_TOKEN_LENGTH, MCP_CHALLENGE, MIN_TOKEN_LENGTH, TOKEN_CHALLENGE } from "./middleware.ts";
import { IDEMPOTENCY_KEY, INVALID_IDEMPOTENCY_KEY, REPLAYABLE_METHODS } from "./billing.ts";
import { WHOLE_PHRASE } from "../parsed.ts";
import { FREE_CALLS_PER_DAY, FREE_CALLS_PER_MINUTE } from "../../projections/wallets.ts";

/** The security schemes of the document: `token` is the X-Token header, `bearer` is POST /mcp's other way. */
export const SECURITY_SCHEMES = {
  token: {
    type: "apiKey" as const,
    in: "header" as const,
    name: "X-Token",
    description: "The wallet token, or a scoped key (`k_...`) where keys are allowed: " +
      `${MIN_TOKEN_LENGTH} to ${MAX_TOKEN_LENGTH} characters after trimming. Missing, unknown or ` +
      "revoked: `401`, not charged.",
  },
  bearer: {
    type: "http" as const,
    scheme: "bearer",
    description:
      "`Authorization: Bearer <wallet token or scoped key>`, as MCP clients send it (POST /mcp only)",
  },
};

/** The security requirement of a route that needs X-Token. */
export const TOKEN_AUTH = [{ token: [] }];

const Problem = z.object({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  detail: z.string(),
}).openapi("Problem", {
  description: "RFC 9457 problem details, answered with Accept: application/problem+json",
});

const text = (description: string) => ({
  description,
  content: { "text/plain": { schema: z.string() } },
});

/** An error answer: its phrase as text, or problem JSON when the client asks for it. */
const error = (description: string) => ({
  description,
  content: { "text/plain": { schema: z.string() }, "application/problem+json": { schema: Problem } },
});

const integerHeader = (description: string, required = false) => ({
  description,
  required,
  schema: { type: "integer" as const },
});

export const RETRY_AFTER_HEADER = {
  "Retry-After": integerHeader("Seconds to wait before trying again", true),
};

export const ERROR_RESPONSES = {
  400: error("Invalid parameters or request: a phrase naming the field and the rule"),
  401: {
    ...error("Missing or invalid X-Token: `Unauthorized`"),
    headers: {
      "WWW-Authenticate": {
        description: `The challenge: \`${TOKEN_CHALLENGE}\` (on POST /mcp, \`${MCP_CHALLENGE}\`)`,
        required: true,
        schema: { type: "string" as const },
      },
    },
  },
  402: error("Balance below the call's cost: `Insufficient credits`"),
  403: error("A scoped key may not make this call (its scope, its buckets, or a route closed to keys)"),
  405: error("Method not allowed on this path"),
  422: error("Idempotency-Key reused with a different request"),
  429: {
    ...error(
      "`Too Many Requests`, with Retry-After: the wallet's calls that charge nothing (free routes, 402s, a " +
        `key's refusals) passed their allowance of ${FREE_CALLS_PER_MINUTE} a minute and ${FREE_CALLS_PER_DAY} a ` +
        "UTC day (nothing is written), the wallet's recent calls failed on our side, or this client's lookups " +
        "of unknown tokens are spent",
    ),
    headers: RETRY_AFTER_HEADER,
  },
  503: {
    ...error(
      "The database cannot be reached: `Database unavailable, nothing was changed: retry shortly`, or " +
        "`Database unavailable, outcome unknown: retry with the same Idempotency-Key`",
    ),
    headers: RETRY_AFTER_HEADER,
  },
} as const;

/**
 * For routes that read a body: more than the route's limit is refused before it is parsed, and a body
 * that stops arriving is refused at the request timeout. Neither is charged.
 */
export const BODY_REFUSED = {
  408: error(
    "The request did not arrive in full within the request timeout (`HTTP_REQUEST_TIMEOUT_MS`); the " +
      "connection closes; not charged",
  ),
  413: error("The body is larger than the route's limit (`Payload Too Large: ...`), not charged"),
};

export function textOk(description: string) {
  return { 200: text(description) };
}

export function jsonOk<S extends z.ZodType>(description: string, schema: S) {
  return { 200: { description, content: { "application/json": { schema } } } };
}

export { error as errorResponseDoc };

export const BILLING_NOTE =
  "Billed: the answer carries X-Balance and X-Cost, also on errors after authentication.";

const REQUEST_ID = {
  "X-Request-Id": { $ref: "#/components/headers/RequestId" },
  "X-Service-Request-Id": { $ref: "#/components/headers/ServiceRequestId" },
};

/** The components the routes refer to: the security schemes and the headers every answer carries. */
export function registerSharedComponents(app: OpenAPIHono<AppEnv>): void {
  for (const [name, scheme] of Object.entries(SECURITY_SCHEMES)) {
    app.openAPIRegistry.registerComponent("securitySchemes", name, scheme);
  }
  app.openAPIRegistry.registerComponent("headers", "RequestId", {
    description: "The X-Request-Id the client sent, echoed when it is 1 to 128 visible ASCII characters " +
      "(the log keeps it as clientRequestId); otherwise the service's own id, as X-Service-Request-Id",
    required: true,
    schema: { type: "string", pattern: "^[\\x21-\\x7e]{1,128}$" },
  });
  app.openAPIRegistry.registerComponent("headers", "ServiceRequestId", {
    description:
      "The service's own id of the request, whatever the client sent: the one its log and a 500's " +
      "body show, to quote when asking about a call",
    required: true,
    schema: { type: "string", pattern: "^[A-Za-z0-9]{20}$" },
  });
}

/** Answers sent before the call is billed: no authentication, no route, or no database. */
const UNBILLED_STATUSES = new Set(["401", "405", "503"]);

type Responses = RouteConfig["responses"];
type Headers = Record<string, unknown>;

function withHeaders(responses: Responses, headersOf: (status: string) => Headers): Responses {
  return Object.fromEntries(
    Object.entries(responses).map(([status, response]) => {
      const own = (response as { headers?: Headers }).headers ?? {};
      return [status, { ...response, headers: { ...headersOf(status), ...own } }];
    }),
  ) as Responses;
}

function billingHeaders(status: string): Headers {
  if (UNBILLED_STATUSES.has(status)) return REQUEST_ID;
  const sure = status.startsWith("2");
  return {
    ...REQUEST_ID,
    "X-Balance": integerHeader("The wallet's balance after the call", sure),
    "X-Cost": integerHeader("Credits this call was charged", sure),
  };
}

const REPLAYED_HEADER = {
  "Idempotent-Replayed": {
    description: "`true` when this is the answer kept for a repeated Idempotency-Key: the call was not " +
      "applied or charged again (X-Cost and X-Balance are the first answer's)",
    required: false,
    schema: { type: "string" as const, enum: ["true"] },
  },
};

function replayableHeaders(status: string): Headers {
  return UNBILLED_STATUSES.has(status) ? REQUEST_ID : { ...billingHeaders(status), ...REPLAYED_HEADER };
}

const IdempotencyKeyHeader = z.string().optional().openapi({
  description: "Makes a retry safe: a repeat with the same key and wallet within 24 hours gets the first " +
    "answer again (status, body, X-Cost, X-Balance, and `Idempotent-Replayed: true`) and is neither " +
    "applied nor charged twice; the same key with another method, path or body is `422`. Anything but " +
    "1 to 64 printable ASCII characters is a billed `400`.",
  pattern: IDEMPOTENCY_KEY.source,
});

/**
 * The Idempotency-Key's rule as the headers' refinement, named as clients spell the header (the
 * phrase billed() gives a request no validator saw).
 */
function idempotencyKeyRule(headers: { "idempotency-key"?: string }, ctx: z.RefinementCtx) {
  const key = headers["idempotency-key"];
  if (key === undefined || IDEMPOTENCY_KEY.test(key)) return;
  ctx.addIssue({
    code: "custom",
    message: INVALID_IDEMPOTENCY_KEY.replace(/^Invalid /, ""),
    params: WHOLE_PHRASE,
  });
}

/** The request of a billed write with the Idempotency-Key header beside its own headers. */
function withIdempotencyKey(request: RouteConfig["request"]): RouteConfig["request"] {
  const own = request?.headers;
  const headers =
    (own instanceof z.ZodObject
      ? own.extend({ "idempotency-key": IdempotencyKeyHeader })
      : z.object({ "idempotency-key": IdempotencyKeyHeader })).superRefine(idempotencyKeyRule);
  return { ...request, headers };
}

type Declared<R> = R & { getRoutingPath(): string };

/** A route anyone may call: no security, the request id headers on every answer. */
export function publicRoute<R extends RouteConfig>(config: R): Declared<R> {
  return createRoute({
    ...config,
    security: [],
    responses: withHeaders(config.responses, () => REQUEST_ID),
  }) as
    & R
    & { getRoutingPath(): string };
}

/**
 * A route that authenticates (X-Token unless `config.security` says otherwise) and bills: its answers
 * after authentication carry the balance and the cost, and a billed write takes an Idempotency-Key.
 */
export function billedRoute<R extends RouteConfig>(config: R, billed = true): Declared<R> {
  const replayable = billed && REPLAYABLE_METHODS.has(config.method.toUpperCase());
  const headersOf = replayable ? replayableHeaders : billed ? billingHeaders : () => REQUEST_ID;
  const responses = withHeaders(config.responses, headersOf);
  const request = replayable ? withIdempotencyKey(config.request) : config.request;
  const security = config.security ?? TOKEN_AUTH;
  return createRoute({ ...config, request, security, responses }) as Declared<R>;
}

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

type Document = ReturnType<OpenAPIHono<AppEnv>["getOpenAPI31Document"]>;

/**
 * The document with every request body `required` unless its route says `required: false` (a KV
 * value may be empty, so sent without a body). Marked in the document, not in the routes: zod-openapi
 * would validate a required zod body of any content type itself, before the route's own parsing.
 */
export function withRequiredBodies(document: Document): Document {
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item ?? {})) {
      const body = (operation as { requestBody?: { required?: boolean; $ref?: string } })?.requestBody;
      if (body && body.$ref === undefined && body.required === undefined) body.required = true;
    }
  }
  return document;
}
