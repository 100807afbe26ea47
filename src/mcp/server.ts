// The MCP server of one authenticated caller (a wallet token or a scoped key): the billed tools
// that mirror REST calls (usage_summary among them, at REST's price of 0), run through the same
// ledger commands, and the free wallet_balance (wallet_balance.ts).
// Stateless: one server per HTTP request, so nothing lives between requests.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Services } from "../calls/services.ts";
import { type Caller, runBilledCall } from "../calls/billed_call.ts";
import { LedgerBusyError } from "../ledger/ledger.ts";
import { CallerThrottledError } from "../ledger/fault_throttle.ts";
import { SERVICE_NAME, SERVICE_VERSION } from "../service_info.ts";
import { log } from "../log.ts";
import { DatabaseUnavailableError, isDatabaseUnavailable } from "../db/faults.ts";
import { UNAVAILABLE_PHRASES } from "../calls/reply.ts";
import type { BilledTool } from "./billed_tool.ts";
import { KV_TOOLS } from "./kv_tools.ts";
import { usageSummary } from "./usage_tool.ts";
import { BilledOutput, billedToolResult, toolError } from "./tool_result.ts";
import { BalanceOutput, walletBalance } from "./wallet_balance.ts";
import type { ToolInputs } from "./request_params.ts";
import { VIEW_CALLS_PER_MINUTE } from "../wallets/view_limit.ts";

export interface McpCall {
  services: Services;
  caller: Caller;
  requestId: string;
}

const INSTRUCTIONS = "A credit-metered key-value store. Every tool result says what the call cost and the " +
  "wallet's balance after it; wallet_balance and usage_summary are free.";

/** Every tool a client sees; a scoped key sees them all and is held to its rules when it calls. */
export const BILLED_TOOLS: BilledTool[] = [...KV_TOOLS, usageSummary];
/** Each tool's argument types, by name, as the tools list declares them. */
export const TOOL_INPUTS: ToolInputs = Object.fromEntries([
  ...BILLED_TOOLS.map((tool) => [tool.name, tool.input]),
  ["wallet_balance", {}],
]);

export function mcpServerFor(call: McpCall): McpServer {
  const server = new McpServer({ name: SERVICE_NAME, version: SERVICE_VERSION }, {
    instructions: INSTRUCTIONS,
  });
  for (const tool of BILLED_TOOLS) registerBilled(server, tool, call);
  registerWalletBalance(server, call);
  return server;
}

/**
 * A fault is a tool error, never a stack and never a crash: the database out says so as REST's 503
 * does (whether the call may have been applied), a fault of ours names the request id.
 */
function faultResult(error: unknown, requestId: string): CallToolResult {
  if (error instanceof LedgerBusyError) return toolError("Service busy, retry shortly");
  if (error instanceof CallerThrottledError) {
    return toolError(`Too Many Requests: retry after ${error.retryAfterSeconds} s`);
  }
  if (isDatabaseUnavailable(error)) {
    const outcome = error instanceof DatabaseUnavailableError ? error.outcome : "unknown";
    return toolError(UNAVAILABLE_PHRASES[outcome]);
  }
  log("error", "tool call failed", { requestId, error: String((error as Error)?.stack ?? error) });
  return toolError(`Internal Server Error (request ${requestId})`);
}

function registerBilled(server: McpServer, tool: BilledTool, { services, caller, requestId }: McpCall) {
  const config = {
    description: tool.description,
    inputSchema: tool.input,
    outputSchema: BilledOutput,
    annotations: tool.annotations,
  };
  server.registerTool(tool.name, config, async (args: Record<string, unknown>) => {
    const startedAt = performance.now();
    try {
      const { at, call } = tool.call(args as never, caller.walletId);
      const outcome = await runBilledCall(services.ledger, call, {
        caller,
        at: { method: at.method, path: at.path, endpoint: at.billing.endpoint, startedAt },
        routePrice: at.billing.price,
      });
      return billedToolResult(outcome);
    } catch (error) {
      return faultResult(error, requestId);
    }
  });
}

/** wallet_balance: free and not logged, limited per wallet, answered by the ledger in a batch. */
function registerWalletBalance(server: McpServer, { services, caller, requestId }: McpCall) {
  const config = {
    description: "The wallet's balance, and the key's spend when called with a scoped key. Free, and " +
      `limited to ${VIEW_CALLS_PER_MINUTE} calls a minute per wallet.`,
    outputSchema: BalanceOutput,
    annotations: { readOnlyHint: true },
  };
  server.registerTool("wallet_balance", config, async (): Promise<CallToolResult> => {
    try {
      return await walletBalance(services.ledger, caller);
    } catch (error) {
      // The tool writes nothing: whatever the database did, nothing was changed.
      if (isDatabaseUnavailable(error)) return toolError(UNAVAILABLE_PHRASES.unchanged);
      return faultResult(error, requestId);
    }
  });
}
