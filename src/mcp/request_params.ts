// The params of the JSON-RPC requests a POST /mcp body holds, checked before the SDK sees them:
// a request of a method this server answers whose params break its schema (`arguments: null`, a
// tool name that is not a string or names no tool) gets `-32602 Invalid params: <field> <rule>`,
// never the SDK's -32603 with its validation dump; a tool call whose arguments do not have the
// tool's types gets a tool error `Invalid arguments: <field> <rule>`, free, as the SDK's would be.
// Pure, but for the Response it rewrites.
import { z } from "zod";
import {
  CallToolRequestSchema,
  InitializeRequestSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

export const INVALID_PARAMS = -32602;

/** The methods whose params are checked here; the SDK answers the others (-32601 and so on). */
const REQUEST_SCHEMAS: Record<string, { safeParse(value: unknown): { success: boolean; error?: any } }> = {
  "initialize": InitializeRequestSchema,
  "ping": PingRequestSchema,
  "tools/list": ListToolsRequestSchema,
  "tools/call": CallToolRequestSchema,
};

type RequestId = string | number;

/** A JSON-RPC request: the SDK's transport refuses anything else with -32700 before any method. */
function requestOf(message: unknown): { id: RequestId; method: string; params?: unknown } | undefined {
  if (typeof message !== "object" || message === null || Array.isArray(message)) return undefined;
  const { jsonrpc, id, method } = message as Record<string, unknown>;
  if (jsonrpc !== "2.0" || typeof method !== "string") return undefined;
  if (typeof id !== "string" && !(typeof id === "number" && Number.isInteger(id))) return undefined;
  return message as { id: RequestId; method: string; params?: unknown };
}

/** What a value is, in a word, for a phrase: never the value itself. */
function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

const EXPECTED: Record<string, string> = {
  record: "an object",
  object: "an object",
  string: "a string",
  number: "a number",
  int: "an integer",
  boolean: "a boolean",
  array: "an array",
};

interface Issue {
  code: string;
  path: PropertyKey[];
  expected?: string;
  message: string;
}

/** `<field> <rule>` for a schema's issue, naming the field below `root` (called `rootName`). */
function issuePhrase(issue: Issue, root: unknown, rootName: string): string {
  const path = issue.path;
  const field = path.length === 0 ? rootName : path.map(String).join(".");
  if (issue.code === "invalid_type" && issue.expected) {
    let value: unknown = root;
    for (const step of path) value = (value as Record<PropertyKey, unknown> | undefined)?.[step];
    const expected = EXPECTED[issue.expected] ?? issue.expected;
    return value === undefined
      ? `${field} is required`
      : `${field} must be ${expected}, not ${kindOf(value)}`;
  }
  // zod names an unknown key in its message: input, never echoed.
  if (issue.code === "unrecognized_keys") return `${field} has a field it does not know`;
  return `${field}: ${issue.message.slice(0, 200)}`;
}

/** The argument types of each tool, by name: what its input schema declares. */
export type ToolInputs = Readonly<Record<string, z.ZodRawShape>>;

/** A refused request: its params (a JSON-RPC error) or its tool's arguments (a tool error). */
export interface Refusal {
  of: "params" | "arguments";
  phrase: string;
}

/** Why a request is refused, or undefined when the SDK may have it. */
export function requestRefusal(message: unknown, tools: ToolInputs): Refusal | undefined {
  const request = requestOf(message);
  const schema = request && REQUEST_SCHEMAS[request.method];
  if (!request || !schema) return undefined;
  const parsed = schema.safeParse(request);
  if (!parsed.success) {
    const issue: Issue = parsed.error.issues[0];
    const below = { ...issue, path: issue.path[0] === "params" ? issue.path.slice(1) : issue.path };
    return { of: "params", phrase: `Invalid params: ${issuePhrase(below, request.params, "params")}` };
  }
  if (request.method !== "tools/call") return undefined;
  const { name, arguments: args = {} } = request.params as { name: string; arguments?: unknown };
  const input = Object.hasOwn(tools, name) ? tools[name] : undefined;
  if (!input) {
    return { of: "params", phrase: `Invalid params: name must be one of ${Object.keys(tools).join(", ")}` };
  }
  const checked = z.object(input).safeParse(args);
  if (checked.success) return undefined;
  return {
    of: "arguments",
    phrase: `Invalid arguments: ${issuePhrase(checked.error.issues[0], args, "arguments")}`,
  };
}

export interface ScreenedBody {
  /** The body for the SDK: each refused request turned into a ping with its id. */
  body: unknown;
  /** The refused requests' ids and why. */
  refused: Map<RequestId, Refusal>;
}

/**
 * Takes the refused requests out of the SDK's way: each becomes a ping with the same id, so the
 * transport still checks the headers and the batch as a whole, and its answer is swapped for the
 * error by answerRefused.
 */
export function screenRequests(body: unknown, tools: ToolInputs): ScreenedBody {
  const refused = new Map<RequestId, Refusal>();
  const screen = (message: unknown) => {
    const refusal = requestRefusal(message, tools);
    if (refusal === undefined) return message;
    const { id } = message as { id: RequestId };
    refused.set(id, refusal);
    return { jsonrpc: "2.0", id, method: "ping" };
  };
  return { body: Array.isArray(body) ? body.map(screen) : screen(body), refused };
}

/** The SDK's JSON answer with each refused request's answer replaced by its error. */
export async function answerRefused(response: Response, refused: Map<RequestId, Refusal>): Promise<Response> {
  const json = response.headers.get("content-type")?.startsWith("application/json");
  if (refused.size === 0 || response.status !== 200 || !json) return response;
  const answered: unknown = await response.json();
  const swap = (message: unknown) => {
    const id = (message as { id?: RequestId })?.id;
    const refusal = id === undefined ? undefined : refused.get(id);
    if (refusal === undefined) return message;
    if (refusal.of === "arguments") {
      return {
        jsonrpc: "2.0",
        id,
        result: { content: [{ type: "text", text: refusal.phrase }], isError: true },
      };
    }
    return { jsonrpc: "2.0", id, error: { code: INVALID_PARAMS, message: refusal.phrase } };
  };
  const body = Array.isArray(answered) ? answered.map(swap) : swap(answered);
  const headers = new Headers(response.headers);
  headers.delete("content-length");
  return new Response(JSON.stringify(body), { status: 200, headers });
}
