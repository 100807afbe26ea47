// Attack 1, poison input: what Postgres refuses to store (U+0000, an unpaired surrogate written
// as a JSON escape), sent every way issue 21 lists by several clients of one funded wallet.
import { api, json } from "../api.ts";
import { LOAD } from "../settings.ts";
import { type Answer, type AnswerTally, countAnswer, newTally } from "../tally.ts";
import { type Attack, clientLoops, httpAnswer } from "./attack.ts";

/** A webhook target nothing listens on: no poison create should ever be delivered. */
const NOWHERE = "http://127.0.0.1:9/poison";

interface Poison {
  kind: string;
  method: string;
  path: string;
  body?: string;
  headers?: Record<string, string>;
  /** The MCP tool call answers inside a 200: its status and cost are in the result. */
  mcp?: boolean;
}

// Bodies are written out as raw JSON text: the escapes must reach the server as they are.
const POISONS: Poison[] = [
  { kind: "NUL in a KV value", method: "POST", path: "/kv/poison/k", body: "a\u0000b" },
  {
    kind: "NUL in webhook options",
    method: "POST",
    path: "/webhook",
    ...json({ url: NOWHERE, format: "slack", options: { channel: "a\u0000b" } }),
  },
  {
    kind: "NUL in a webhook template",
    method: "POST",
    path: "/webhook",
    ...json({ url: NOWHERE, format: "custom", template: { text: "a\u0000b" } }),
  },
  {
    kind: "NUL in an unknown field name",
    method: "POST",
    path: "/webhook",
    body: `{"url":"${NOWHERE}","\\u0000x":1}`,
    headers: { "content-type": "application/json" },
  },
  { kind: "NUL in a list cursor", method: "GET", path: "/kv/poison?cursor=%00" },
  {
    kind: "unpaired surrogate as a JSON escape",
    method: "POST",
    path: "/webhook",
    body: `{"url":"${NOWHERE}","format":"custom","template":{"text":"\\ud800"}}`,
    headers: { "content-type": "application/json" },
  },
  {
    kind: "NUL in an MCP kv_set value",
    method: "POST",
    path: "/mcp",
    mcp: true,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "kv_set", arguments: { bucket: "poison", key: "k", value: "a\u0000b" } },
    }),
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
  },
];

/** An MCP tool result as the tally sees it: the REST status and cost it carries, or a fault. */
function mcpAnswer(status: number, text: string): Answer {
  if (status !== 200) return { status, cost: null, retryAfter: false };
  try {
    const result = JSON.parse(text).result;
    const content = result?.structuredContent;
    if (content && typeof content.status === "number") {
      return {
        status: content.status,
        cost: typeof content.cost === "number" ? content.cost : null,
        retryAfter: false,
      };
    }
    const said = String(result?.content?.[0]?.text ?? "");
    // The tool's own fault: an "Internal Server Error (request ...)" text without a charge.
    if (said.startsWith("Internal Server Error")) return { status: 500, cost: null, retryAfter: false };
    return { status: result?.isError ? "mcp error" : 200, cost: null, retryAfter: false };
  } catch {
    return { status: "mcp unreadable", cost: null, retryAfter: false };
  }
}

export const poisonInput: Attack = (context) => {
  const byKind = new Map<string, AnswerTally>(POISONS.map((p) => [p.kind, newTally()]));
  let next = 0;
  const loops = clientLoops(LOAD.poisonClients, async (_client, signal) => {
    const poison = POISONS[next++ % POISONS.length];
    const answer = await api(context.url, {
      method: poison.method,
      path: poison.path,
      token: context.attacker.token,
      from: context.attacker.from,
      body: poison.body,
      headers: poison.headers,
      signal,
    });
    const counted = poison.mcp ? mcpAnswer(answer.status, answer.text) : httpAnswer(answer);
    countAnswer(byKind.get(poison.kind)!, counted);
    return counted;
  });
  return Promise.resolve({
    async stop() {
      await loops.stop();
      const notes = [...byKind].map(([kind, tally]) =>
        `${kind}: ${Object.entries(tally.statuses).map(([s, n]) => `${s} x${n}`).join(", ") || "none"}`
      );
      return { tally: loops.tally, notes };
    },
  });
};
