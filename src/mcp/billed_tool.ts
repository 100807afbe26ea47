// A tool that mirrors a REST call: the same price, call-log endpoint, method and path, and the same
// billed call (its feature's builder: the key access, reads and pure decision), so a tool call is
// billed and logged exactly like the REST call.
import type { ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import type { z } from "zod";
import type { RouteBilling } from "../calls/prices.ts";
import type { BilledCall } from "../calls/billed_call.ts";
import { failure } from "../calls/reply.ts";
import type { Parsed } from "../parsed.ts";

/** Where a tool call goes as its REST call: the route's billing, and what its call log shows. */
export interface RestTarget {
  /** The REST route's price and call-log endpoint. */
  billing: RouteBilling;
  method: string;
  /** The REST path with its query string, as the call log shows it. */
  path: string;
}

/** A tool call: its feature's billed call, and the REST call it is made as. */
export interface ToolCall {
  at: RestTarget;
  call: BilledCall<any>;
}

export interface BilledTool<Shape extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  description: string;
  /** Argument types for the client; the field rules are checked by `call`, billed like REST's 400. */
  input: Shape;
  annotations?: ToolAnnotations;
  call(args: z.infer<z.ZodObject<Shape>>, walletId: string): ToolCall;
}

/** Declares a tool with its argument types checked against its input shape. */
export function billedTool<Shape extends z.ZodRawShape>(tool: BilledTool<Shape>): BilledTool {
  return tool as unknown as BilledTool;
}

/** The call when the arguments pass the REST rules, else the same call answering the REST 400. */
export function unlessRefused<T>(
  parsed: Parsed<T>,
  target: RestTarget & Pick<BilledCall, "access">,
  build: (value: T) => BilledCall<any>,
): ToolCall {
  const { access, ...at } = target;
  if (parsed.ok) return { at, call: build(parsed.value) };
  const decision = failure(400, parsed.phrase);
  return { at, call: { access, decide: () => decision } };
}
