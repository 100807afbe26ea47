// The simulation's key-value calls: each drawn from the seed at once (so a run replays exactly),
// sent as HTTP, and run on the model, which says what the answer must be and checks what else came
// back (the ETag of a read, the keys of a listing).
import assert from "node:assert/strict";
import type { Billed, KvConditions, ModelPage, ModelWallet, random } from "./model.ts";

type Rng = ReturnType<typeof random>;

/** An answer of the in-process service. */
export interface Answer {
  status: number;
  text: string;
  headers: Headers;
}

export interface KvOp {
  what: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** A listing: how many keys a page may hold, and what it starts from. */
  listing?: { prefix: string; limit: number };
  /** Runs the call on the model: the answer it must get, and a check of the rest of it. */
  model(w: ModelWallet, now: number): { billed: Billed; check?: (res: Answer) => void };
}

export const KEYS = ["a", "b", "c", "n", "\u{E000}", "\u{1F600}"];
export const TTLS = [0, 3600, 7200];
const INCREMENTS = [1, 1, -2, 7, Number.MAX_SAFE_INTEGER];
const PREFIXES = ["", "a", "burst", "\u{E000}"];
const LIMITS = [1, 2, 100];
/** An ETag no entry ever has: stream versions start at 1. */
const NEVER = '"0"';

export const path = (key: string) => `/kv/b/${encodeURIComponent(key)}`;

/** An ETag to send: the entry's current one when a read saw it, else one it had before. */
function etagFor(rng: Rng, w: ModelWallet, key: string, current: boolean): string {
  const known = w.kv.get(`b/${key}`)?.etag;
  if (current && known) return known;
  const stale = [...(w.etagsSeen.get(`b/${key}`) ?? [])].filter((etag) => etag !== known);
  return stale.length > 0 ? rng.pick(stale) : NEVER;
}

function conditionsFor(rng: Rng, w: ModelWallet, key: string, forDelete: boolean): KvConditions {
  const kind = rng.int(forDelete ? 3 : 6);
  if (kind === 1) return { ifMatch: etagFor(rng, w, key, true) };
  if (kind === 2) return { ifMatch: etagFor(rng, w, key, false) };
  if (kind === 3) return { ifMatch: "*" };
  if (kind === 4) return { ifNoneMatch: "*" };
  return {};
}

function headersOf(conditions: KvConditions): Record<string, string> {
  return {
    ...(conditions.ifMatch ? { "if-match": conditions.ifMatch } : {}),
    ...(conditions.ifNoneMatch ? { "if-none-match": conditions.ifNoneMatch } : {}),
  };
}

const shown = (conditions: KvConditions) =>
  Object.entries(headersOf(conditions)).map(([name, value]) => ` ${name}: ${value}`).join("");

/** The model's clock reads real time a little after the service's: expiries agree to within this. */
const EXPIRY_TOLERANCE_MS = 2000;

function sameKeys(what: string, seen: ModelPage["keys"], expected: ModelPage["keys"]) {
  const names = (keys: ModelPage["keys"]) => keys.map(({ key, size }) => ({ key, size }));
  assert.deepEqual(names(seen), names(expected), what);
  seen.forEach((entry, i) => {
    const drift = Math.abs(Date.parse(entry.expiresAt) - Date.parse(expected[i].expiresAt));
    assert.ok(
      drift <= EXPIRY_TOLERANCE_MS,
      `${what}: ${entry.key} expires at ${entry.expiresAt}, not ${expected[i].expiresAt}`,
    );
  });
}

/**
 * What a page answered must be: exactly the model's page when `exact`; in a burst, a page whose
 * snapshot was cut at the limit may come short of keys written in the same batch, with a cursor.
 */
export function checkPage(what: string, res: Answer, page: ModelPage, exact: boolean) {
  const body = JSON.parse(res.text) as { keys: ModelPage["keys"]; nextCursor: string | null };
  assert.deepEqual(Object.keys(body).sort(), ["keys", "nextCursor"], what);
  if (exact || body.nextCursor === null) {
    sameKeys(what, body.keys, page.keys);
    assert.equal(body.nextCursor !== null, page.more, `${what}: next page`);
    return;
  }
  sameKeys(`${what}: a short page is a prefix`, body.keys, page.keys.slice(0, body.keys.length));
}

/** One random KV call on bucket `b`. */
export function randomKvOp(rng: Rng, w: ModelWallet, exactPages: boolean): KvOp {
  const key = rng.pick(KEYS);
  const kind = rng.int(5);
  if (kind === 0) {
    const ttl = rng.pick(TTLS);
    const invalid = rng.chance(0.1);
    const value = invalid ? "x".repeat(1001) : rng.chance(0.5) ? String(rng.int(1000)) : `v${rng.int(1000)}`;
    const conditions = conditionsFor(rng, w, key, false);
    return {
      what: `POST ${path(key)} ttl=${ttl}${invalid ? " (too long)" : ""}${shown(conditions)}`,
      method: "POST",
      path: `${path(key)}?ttl=${ttl}`,
      headers: headersOf(conditions),
      body: value,
      model: (w, now) => ({ billed: w.kvWrite(`b/${key}`, value, ttl, now, invalid, conditions) }),
    };
  }
  if (kind === 1) {
    return {
      what: `GET ${path(key)}`,
      method: "GET",
      path: path(key),
      headers: {},
      model(w, now) {
        const billed = w.kvRead(`b/${key}`, now);
        const check = (res: Answer) => {
          const problem = w.observeEtag(`b/${key}`, res.headers.get("etag"));
          assert.equal(problem, undefined, `GET ${path(key)}: ${problem}`);
        };
        return { billed, check: billed.status === 200 ? check : undefined };
      },
    };
  }
  if (kind === 2) {
    const conditions = conditionsFor(rng, w, key, true);
    return {
      what: `DELETE ${path(key)}${shown(conditions)}`,
      method: "DELETE",
      path: path(key),
      headers: headersOf(conditions),
      model: (w, now) => ({ billed: w.kvDelete(`b/${key}`, now, conditions) }),
    };
  }
  if (kind === 3) {
    const by = rng.pick(INCREMENTS);
    const ttl = rng.pick(TTLS);
    return {
      what: `POST ${path(key)}/incr by=${by} ttl=${ttl}`,
      method: "POST",
      path: `${path(key)}/incr?by=${by}&ttl=${ttl}`,
      headers: {},
      model: (w, now) => ({ billed: w.kvIncr(`b/${key}`, by, ttl, now) }),
    };
  }
  const prefix = rng.pick(PREFIXES);
  const limit = rng.pick(LIMITS);
  const what = `GET /kv/b?prefix=${prefix}&limit=${limit}`;
  return {
    what,
    method: "GET",
    path: `/kv/b?prefix=${encodeURIComponent(prefix)}&limit=${limit}`,
    headers: {},
    listing: { prefix, limit },
    model(w, now) {
      const { billed, page } = w.kvList("b", prefix, undefined, limit, now);
      return { billed, check: page && ((res) => checkPage(what, res, page, exactPages)) };
    },
  };
}
