// The key-value tools: each mirrors its REST call (src/http/routes/kv.ts) with the same field
// rules, price, call log and decision. A new KV call becomes a tool by one more entry here.
import { z } from "zod";
import { read } from "../ledger/reads.ts";
import { kvEntryRead } from "../../projections/kv.ts";
import { deleteValue, readValue, writeValue } from "../kv/commands.ts";
import { KV, KvPath, KvValue, KvWriteQuery } from "../http/routes/kv.ts";
import { type Parsed, parseWith } from "../http/validation.ts";
import { type BilledTool, billedTool, mirrored, unlessRefused } from "./billed_tool.ts";

const bucket = z.string().describe('Bucket: 1 to 30 characters, no "/", not starting with "reserved-"');
const key = z.string().describe('Key: 1 to 30 characters, no "/"');

/** The REST path of a key, its names escaped as a client would send them. */
function kvPath(names: { bucket: string; key: string }, query = ""): string {
  return `/kv/${encodeURIComponent(names.bucket)}/${encodeURIComponent(names.key)}${query}`;
}

/** The first refusal in REST's order (path, then query, then body), or every value. */
function allOk<T extends unknown[]>(...parsed: { [I in keyof T]: Parsed<T[I]> }): Parsed<T> {
  for (const one of parsed) if (!one.ok) return one;
  return { ok: true, value: parsed.map((one) => (one as { value: unknown }).value) as T };
}

const kvGet = billedTool({
  name: "kv_get",
  description:
    `Read the value of a key (GET /kv/{bucket}/{key}). Costs ${KV.price} credit, also when the key is missing.`,
  input: { bucket, key },
  annotations: { readOnlyHint: true },
  call(args, walletId) {
    const at = {
      billing: KV,
      method: "GET",
      path: kvPath(args),
      access: { need: "read", bucket: args.bucket },
    } as const;
    return unlessRefused(parseWith(KvPath, args), at, (names) =>
      mirrored({
        ...at,
        reads: { entry: read(kvEntryRead, { walletId, ...names }) },
        decide: ({ reads }) => readValue(reads.entry),
      }));
  },
});

const kvSet = billedTool({
  name: "kv_set",
  description:
    `Write a value (POST /kv/{bucket}/{key}?ttl=). Costs ${KV.price} credit. A write sets a fresh TTL.`,
  input: {
    bucket,
    key,
    value: z.string().describe("Any text, at most 1000 characters"),
    ttl: z.number().optional().describe(
      "Seconds to live, an integer from 0 to 2592000; 0 or absent: 30 days",
    ),
  },
  annotations: { idempotentHint: true, destructiveHint: true },
  // A plain write reads nothing, so it needs no wallet id.
  call(args) {
    const query = args.ttl === undefined ? "" : `?ttl=${args.ttl}`;
    const at = {
      billing: KV,
      method: "POST",
      path: kvPath(args, query),
      access: { need: "write", bucket: args.bucket },
    } as const;
    const parsed = allOk(
      parseWith(KvPath, { bucket: args.bucket, key: args.key }),
      parseWith(KvWriteQuery, args.ttl === undefined ? {} : { ttl: String(args.ttl) }),
      parseWith(KvValue, args.value, "value"),
    );
    return unlessRefused(parsed, at, ([names, { ttl }, value]) => {
      const write = { ...names, value, ttlSeconds: Number(ttl ?? 0) };
      return { ...at, decide: ({ now }) => writeValue(write, now) };
    });
  },
});

const kvDelete = billedTool({
  name: "kv_delete",
  description:
    `Delete a key (DELETE /kv/{bucket}/{key}). Costs ${KV.price} credit, also when the key is missing.`,
  input: { bucket, key },
  annotations: { destructiveHint: true, idempotentHint: true },
  call(args, walletId) {
    const at = {
      billing: KV,
      method: "DELETE",
      path: kvPath(args),
      access: { need: "write", bucket: args.bucket },
    } as const;
    return unlessRefused(parseWith(KvPath, args), at, (names) =>
      mirrored({
        ...at,
        reads: { entry: read(kvEntryRead, { walletId, ...names }) },
        decide: ({ reads }) => deleteValue(reads.entry),
      }));
  },
});

export const KV_TOOLS: BilledTool[] = [kvGet, kvSet, kvDelete];
