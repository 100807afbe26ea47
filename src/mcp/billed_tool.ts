// A tool that mirrors a REST call: the same price, call-log endpoint, method and path, the same
// reads and the same pure decision, so a tool call is billed and logged exactly like the call.
import type { ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import type { z } from "zod";
import type { DecideState, Decision } from "../ledger/command.ts";
import type { ReadSet } from "../ledger/reads.ts";
import type { RouteBilling } from "../calls/prices.ts";
import type { KeyAccess } from "../calls/key_gate.ts";
import { failure, type Reply } from "../calls/reply.ts";
import type { Parsed } from "../calls/parsed.ts";

/** The REST call a tool call stands for. */
export interface MirroredCall<R extends ReadSet = ReadSet> {
  /** The REST route's price and call-log endpoint. */
  billing: RouteBilling;
  method: string;
  /** The REST path with its query string, as the call log shows it. */
  path: string;
  /** What the call needs of a scoped key; absent: keys may not make it (REST's 403). */
  access?: KeyAccess;
  reads?: R;
  decide(state: DecideState<R>): Decision<Reply>;
}

export interface BilledTool<Shape extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  description: string;
  /** Argument types for the client; the field rules are checked by `call`, billed like REST's 400. */
  input: Shape;
  annotations?: ToolAnnotations;
  call(args: z.infer<z.ZodObject<Shape>>, walletId: string): MirroredCall<any>;
}

/** Declares a tool with its argument types checked against its input shape. */
export function billedTool<Shape extends z.ZodRawShape>(tool: BilledTool<Shape>): BilledTool {
  return tool as unknown as BilledTool;
}

/** Types a mirrored call from its own reads, then forgets them for the tool list. */
export function mirrored<R extends ReadSet>(call: MirroredCall<R>): MirroredCall<any> {
  return call;
}

/** The call when the arguments pass the REST rules, else the same call answering the REST 400. */
export function unlessRefused<T>(
  parsed: Parsed<T>,
  refused: Omit<MirroredCall, "decide" | "reads">,
  build: (value: T) => MirroredCall<any>,
): MirroredCall<any> {
  if (parsed.ok) return build(parsed.value);
  const decision = failure(400, parsed.phrase);
  return { ...refused, decide: () => decision };
}
