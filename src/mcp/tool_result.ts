// What a billed tool call answers over MCP: the REST answer's status and body with the cost and the
// balance after the call, as structured content and as the same JSON in text; a refusal is a tool
// error (isError) that says why, never a protocol error.
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { LedgerResult } from "../ledger/command.ts";
import { type Reply, UNAUTHORIZED } from "../calls/reply.ts";
import { isKeyRefusal } from "../calls/key_gate.ts";

/** The structured content of every billed tool's result. */
export const BilledOutput = {
  status: z.number().int().describe("The HTTP status the REST call answers"),
  result: z.unknown().optional().describe("The REST answer: its text, or its JSON"),
  error: z.string().optional().describe("Why the call failed"),
  etag: z.string().optional().describe("The entry's ETag (kv_get): pass it as kv_set's ifMatch"),
  cost: z.number().int().describe("Credits this call was charged"),
  balance: z.number().int().describe("The wallet's balance after the call"),
};

/** A tool error with no call behind it: nothing was charged. */
export function toolError(message: string): CallToolResult {
  return { content: [{ type: "text", text: message }], isError: true };
}

function resultOf(reply: Reply): unknown {
  return reply.contentType.startsWith("application/json") ? JSON.parse(reply.body) : reply.body;
}

export function billedToolResult(outcome: LedgerResult<Reply>): CallToolResult {
  if (outcome.kind === "unauthorized") return toolError(UNAUTHORIZED);
  const { outcome: reply, cost, balance } = outcome;
  if (isKeyRefusal(reply)) return toolError(reply.body);
  if (reply.status >= 400) {
    const structured = { status: reply.status, error: reply.body, cost, balance };
    return {
      content: [{
        type: "text",
        text: `${reply.body} (status ${reply.status}, cost ${cost}, balance ${balance})`,
      }],
      structuredContent: structured,
      isError: true,
    };
  }
  const etag = reply.headers?.etag;
  const structured = {
    status: reply.status,
    result: resultOf(reply),
    ...(etag ? { etag } : {}),
    cost,
    balance,
  };
  return { content: [{ type: "text", text: JSON.stringify(structured) }], structuredContent: structured };
}
