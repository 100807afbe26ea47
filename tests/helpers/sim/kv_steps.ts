// The simulation's key-value steps: one call alone (a listing follows its cursor to the end), a
// read-modify-write guarded by If-Match, and bursts of several calls of one wallet at once, whose
// order the balances they answer reveal, so the model can take them in that order.
import assert from "node:assert/strict";
import type { Billed, ModelWallet, random } from "./model.ts";
import { type Answer, checkPage, KEYS, type KvOp, path, randomKvOp, TTLS } from "./kv_ops.ts";

const MAX_PAGES = 20;

/** What the steps need of the simulation. */
export interface KvSimulation {
  rng: ReturnType<typeof random>;
  now(): number;
  send(
    w: ModelWallet,
    op: { method: string; path: string; headers: Record<string, string>; body?: string },
  ): Promise<
    Answer
  >;
}

/** Compares an answer's status, billing headers and (when the model says it) body with the model's. */
export function compareBilled(what: string, res: Answer, model: Billed) {
  const cost = res.headers.get("x-cost");
  const balance = res.headers.get("x-balance");
  const seen = {
    status: res.status,
    ...(cost === null ? {} : { cost: Number(cost) }),
    ...(balance === null ? {} : { balance: Number(balance) }),
    ...(model.body !== undefined ? { body: res.text } : {}),
  };
  assert.deepEqual(seen, model, `${what}: ${res.text}`);
}

async function run(sim: KvSimulation, w: ModelWallet, op: KvOp, what = op.what): Promise<Answer> {
  const res = await sim.send(w, op);
  const { billed, check } = op.model(w, sim.now());
  compareBilled(what, res, billed);
  check?.(res);
  return res;
}

export function kvStep(sim: KvSimulation) {
  return async (w: ModelWallet) => {
    const op = randomKvOp(sim.rng, w, true);
    if (op.listing) return await listAllPages(sim, w, op);
    await run(sim, w, op);
    return op.what;
  };
}

async function listAllPages(sim: KvSimulation, w: ModelWallet, op: KvOp) {
  const { prefix, limit } = op.listing!;
  let after: string | undefined;
  let cursor: string | null = null;
  let pages = 0;
  do {
    const what = `${op.what} page ${pages + 1}`;
    const { billed, page } = w.kvList("b", prefix, after, limit, sim.now());
    const query = cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`;
    const res = await sim.send(w, { ...op, path: op.path + query });
    compareBilled(what, res, billed);
    if (!page) return `${op.what} (${res.status})`;
    checkPage(what, res, page, true);
    cursor = JSON.parse(res.text).nextCursor;
    after = page.keys.at(-1)?.key;
    pages++;
  } while (cursor !== null && pages < MAX_PAGES);
  return `${op.what}: ${pages} page(s)`;
}

/** GET a key, then write it back changed with If-Match its ETag (If-None-Match: * when missing). */
export function readModifyWriteStep(sim: KvSimulation) {
  const key = sim.rng.pick(KEYS);
  const ttl = sim.rng.pick(TTLS);
  return async (w: ModelWallet) => {
    const read: KvOp = {
      what: `GET ${path(key)}`,
      method: "GET",
      path: path(key),
      headers: {},
      model: (w, now) => ({ billed: w.kvRead(`b/${key}`, now) }),
    };
    const res = await run(sim, w, read);
    if (res.status !== 200 && res.status !== 404) return `${read.what} (${res.status})`;
    const etag = res.headers.get("etag");
    if (res.status === 200) assert.equal(w.observeEtag(`b/${key}`, etag), undefined, `${read.what}: ETag`);
    const conditions = res.status === 200 ? { ifMatch: etag! } : { ifNoneMatch: "*" };
    const value = /^\d+$/.test(res.text) ? String(Number(res.text) + 1) : "0";
    const headers: Record<string, string> = res.status === 200
      ? { "if-match": etag! }
      : { "if-none-match": "*" };
    const what = `GET then POST ${path(key)} ${JSON.stringify(headers)}`;
    await run(sim, w, {
      what,
      method: "POST",
      path: `${path(key)}?ttl=${ttl}`,
      headers,
      body: value,
      model: (w, now) => ({ billed: w.kvWrite(`b/${key}`, value, ttl, now, false, conditions) }),
    });
    return what;
  };
}

/**
 * Several KV calls of one wallet at once, any mix: they share ledger batches in an order no one
 * chooses, and the balance each answer carries tells that order; the model then takes them in it.
 */
export function mixedBurstStep(sim: KvSimulation) {
  const n = 2 + sim.rng.int(6);
  return async (w: ModelWallet) => {
    const ops = Array.from({ length: n }, () => randomKvOp(sim.rng, w, false));
    const answers = await Promise.all(ops.map((op) => sim.send(w, op)));
    const served = (res: Answer) => res.status !== 401 && res.status !== 402;
    const balance = (res: Answer) => Number(res.headers.get("x-balance") ?? -1);
    const order = ops.map((op, i) => ({ op, res: answers[i] }))
      .sort((a, b) => Number(served(b.res)) - Number(served(a.res)) || balance(b.res) - balance(a.res));
    for (const { op, res } of order) {
      const { billed, check } = op.model(w, sim.now());
      compareBilled(`${op.what} (in a burst)`, res, billed);
      check?.(res);
    }
    return `burst of ${order.map(({ op }) => op.what).join(", ")}`;
  };
}
