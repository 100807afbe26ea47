// Error answers as CONTRACT section 1 describes them: one short text/plain phrase, or RFC 9457
// problem JSON for clients that ask for it.
import type { Context } from "hono";
import type { AppEnv } from "./env.ts";

const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  402: "Payment Required",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Content",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

export function wantsProblemJson(c: Context<AppEnv>): boolean {
  return (c.req.header("accept") ?? "").toLowerCase().includes("application/problem+json");
}

/** Renders an answer body; errors become problem JSON when the client asked for it. */
export function renderBody(
  c: Context<AppEnv>,
  status: number,
  contentType: string,
  body: string,
): { contentType: string; body: string } {
  if (status < 400 || !wantsProblemJson(c)) return { contentType, body };
  const problem = { type: "about:blank", title: TITLES[status] ?? "Error", status, detail: body };
  return { contentType: "application/problem+json", body: JSON.stringify(problem) };
}

export function errorResponse(
  c: Context<AppEnv>,
  status: number,
  phrase: string,
  headers: Record<string, string> = {},
): Response {
  const rendered = renderBody(c, status, "text/plain; charset=utf-8", phrase);
  return new Response(rendered.body, {
    status,
    headers: { ...headers, "content-type": rendered.contentType },
  });
}

/** Thrown by routes and middleware for an answer that needs no billing. */
export class HttpError extends Error {
  constructor(readonly status: number, message: string, readonly headers: Record<string, string> = {}) {
    super(message);
    this.name = "HttpError";
  }
}
