// POST /mcp: the Model Context Protocol over Streamable HTTP (the SDK's web-standard transport),
// stateless, answering JSON. Authenticated with X-Token or Authorization: Bearer (a wallet token
// or a scoped key). The protocol itself is free; each tool call is billed as its REST call.
import { type OpenAPIHono, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { AppEnv } from "../env.ts";
import { authenticate } from "../middleware.ts";
import { readTextBody } from "../body.ts";
import { billedRoute, BODY_REFUSED, ERROR_RESPONSES, errorResponseDoc } from "../openapi.ts";
import { mcpServerFor, TOOL_INPUTS } from "../../mcp/server.ts";
import { answerRefused, screenRequests } from "../../mcp/request_params.ts";

/** A JSON-RPC message or a batch of them: far above any valid tool call (a value is 1000 characters). */
export const MAX_MCP_BODY_BYTES = 64 * 1024;

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** X-Token, or else the token of `Authorization: Bearer`, as MCP clients send it. */
const requireMcpCaller: MiddlewareHandler<AppEnv> = async (c, next) => {
  const bearer = BEARER.exec(c.req.header("authorization") ?? "")?.[1];
  await authenticate(c, c.req.header("x-token") ?? bearer);
  await next();
};

function jsonRpcError(status: number, code: number, message: string): Response {
  const body = { jsonrpc: "2.0", error: { code, message }, id: null };
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

const JsonRpcMessage = z.object({
  jsonrpc: z.literal("2.0"),
  id: z.union([z.string(), z.number().int()]).optional(),
  method: z.string().openapi({ example: "tools/call" }),
  params: z.record(z.string(), z.unknown()).optional(),
}).openapi("JsonRpcMessage", { description: "A JSON-RPC 2.0 request or notification of MCP" });

const JsonRpcError = z.object({
  jsonrpc: z.literal("2.0"),
  error: z.object({ code: z.number().int(), message: z.string() }),
  id: z.union([z.string(), z.number(), z.null()]),
}).openapi("JsonRpcError");

const jsonRpcErrorDoc = (description: string) => ({
  description,
  content: { "application/json": { schema: JsonRpcError } },
});

const mcpRoute = billedRoute({
  method: "post",
  path: "/mcp",
  operationId: "callMcp",
  security: [{ token: [] }, { bearer: [] }],
  summary: "Model Context Protocol endpoint (JSON-RPC over Streamable HTTP)",
  description: "MCP's Streamable HTTP transport, stateless, answering `application/json`. Send " +
    "`Accept: application/json, text/event-stream`. Authenticate with `X-Token` or " +
    "`Authorization: Bearer <token or scoped key>`. `initialize`, `tools/list` and the other protocol " +
    "messages are free; `tools/call` of `kv_get`, `kv_set`, `kv_delete`, `kv_incr`, `kv_list` is billed exactly like the REST " +
    "call it mirrors (same price, same call log, endpoint `kv`, the REST path), and each result carries " +
    "its cost and the balance after it; `wallet_balance` is free, and so is `usage_summary` (GET " +
    "/token/usage, wallet token only, within the free views' limit). A refused call is a tool result with " +
    "`isError`, charged as REST charges it. GET and DELETE are 405: no session, no server stream.",
  request: {
    body: {
      content: {
        "application/json": { schema: z.union([JsonRpcMessage, z.array(JsonRpcMessage)]) },
      },
    },
  },
  responses: {
    200: {
      description: "The JSON-RPC response (an array for a batch)",
      content: {
        "application/json": {
          schema: z.union([z.record(z.string(), z.unknown()), z.array(z.record(z.string(), z.unknown()))]),
        },
      },
    },
    202: { description: "Notifications and responses only: accepted, no body" },
    400: jsonRpcErrorDoc("Not JSON, not JSON-RPC, or not UTF-8: a JSON-RPC error"),
    401: ERROR_RESPONSES[401],
    405: ERROR_RESPONSES[405],
    406: jsonRpcErrorDoc("Accept must list application/json and text/event-stream: a JSON-RPC error"),
    408: BODY_REFUSED[408],
    413: errorResponseDoc(`Body over ${MAX_MCP_BODY_BYTES} bytes`),
    415: jsonRpcErrorDoc("Content-Type must be application/json: a JSON-RPC error"),
  },
}, false);

export function mcpRoutes(app: OpenAPIHono<AppEnv>) {
  app.openAPIRegistry.registerPath(mcpRoute);
  app.post(mcpRoute.path, requireMcpCaller, async (c) => {
    // Bounded and strict like every body; too large (413), late (408) or not UTF-8 (400) throws.
    const text = await readTextBody(c, MAX_MCP_BODY_BYTES);
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return jsonRpcError(400, -32700, "Parse error: Invalid JSON");
    }
    const server = mcpServerFor({
      services: c.get("services"),
      caller: { walletId: c.get("walletId")!, key: c.get("key") },
      requestId: c.get("requestId"),
    });
    // Malformed params get a short -32602 here, wrong argument types a short tool error: never the
    // SDK's validation dump.
    const screened = screenRequests(message, TOOL_INPUTS);
    const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true });
    await server.connect(transport);
    try {
      const answer = await transport.handleRequest(c.req.raw, { parsedBody: screened.body });
      return await answerRefused(answer, screened.refused);
    } finally {
      await server.close();
    }
  });
}
