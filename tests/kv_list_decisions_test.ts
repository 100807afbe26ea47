// Given events / when a listing / then its page: key order, prefixes, limits, cursors and the batch's
// own writes laid over the snapshot, without a database.
import assert from "node:assert/strict";
import { type NewEvent, newEvent } from "../events/catalogue.ts";
import { commandOfCall, decideBilled, stream, WALLET } from "./helpers/decider.ts";
import { kvCalls } from "../src/kv/calls.ts";
import type { BilledCommand } from "../src/ledger/command.ts";
import type { Read } from "../src/ledger/reads.ts";
import { type KvBucketChanges, kvBucketChangesRead, type KvPage } from "../projections/kv.ts";
import { decodeCursor, encodeCursor, type KvListing, utf8Length } from "../src/kv/listing.ts";
import { compareKeys, prefixEnd } from "../projections/kv_key_order.ts";
import type { Reply } from "../src/calls/reply.ts";

const opened = [
  newEvent("WalletOpened", {}),
  newEvent("CreditsGranted", { amount: 100, balance: 100, reason: "welcome" }),
];
const LATER = "2099-01-01T00:00:00.000Z";
const put = (key: string, value = "v", expiresAt = LATER, bucket = "b") =>
  newEvent("KvWritten", { bucket, key, value, expiresAt });
const del = (key: string) => newEvent("KvDeleted", { bucket: "b", key });

type ListReads = { page: Read<KvPage>; changes: Read<KvBucketChanges> };

function list(prefix = "", limit = 100, after?: string) {
  const listing: KvListing = { bucket: "b", prefix, after, limit };
  return commandOfCall(kvCalls.list({ walletId: WALLET, ...listing }), {
    method: "GET",
    path: "/kv/b",
    endpoint: "kv",
  });
}

/** The answer's keys and where its cursor resumes (decoded), or null. */
function pageOf(given: NewEvent[], command: BilledCommand<Reply, ListReads>, overrides = {}) {
  const call = decideBilled(given, command, { overrides }).call();
  assert.equal(call.outcome.status, 200);
  const body = JSON.parse(call.outcome.body);
  const cursor = body.nextCursor === null ? null : decodeCursor(body.nextCursor, "b", "");
  return { keys: body.keys, names: body.keys.map((k: { key: string }) => k.key), cursor };
}

/** What the batch's own events leave in the changes read. */
function changesOf(events: NewEvent[]): KvBucketChanges {
  return stream(events).reduce<KvBucketChanges | undefined>(
    (changes, event) => kvBucketChangesRead.evolve(changes, event),
    undefined,
  )!;
}

Deno.test("given writes and a delete, when listed, then live keys in code-point order with expiry and size", () => {
  const given = [
    ...opened,
    put("b", "héllo"),
    put("a", "🎉"),
    put("\u{E000}"),
    put("\u{1F600}"),
    put("gone"),
    del("gone"),
    put("old", "v", "2027-03-01T11:00:00.000Z"),
    put("elsewhere", "v", LATER, "other"),
  ];
  const { keys, names, cursor } = pageOf(given, list());
  assert.deepEqual(
    names,
    ["a", "b", "\u{E000}", "\u{1F600}"],
    "code points, not UTF-16 units; no expired key",
  );
  assert.deepEqual(keys[0], { key: "a", expiresAt: LATER, size: 4 });
  assert.equal(keys[1].size, 6, "bytes of UTF-8, not characters");
  assert.equal(cursor, null);
});

Deno.test("given five keys, when listed 2 at a time, then pages follow the cursor to the end", () => {
  const given = [...opened, ...["k1", "k2", "k3", "k4", "k5"].map((k) => put(k))];
  const first = pageOf(given, list("", 2));
  assert.deepEqual([first.names, first.cursor], [["k1", "k2"], { after: "k2" }]);
  const second = pageOf(given, list("", 2, "k2"));
  assert.deepEqual([second.names, second.cursor], [["k3", "k4"], { after: "k4" }]);
  const last = pageOf(given, list("", 2, "k4"));
  assert.deepEqual([last.names, last.cursor], [["k5"], null]);
  assert.deepEqual(pageOf(given, list("", 5)).cursor, null, "exactly the limit: no next page");
});

Deno.test("given keys with several prefixes, when listed with one, then only its keys", () => {
  const given = [...opened, ...["user:1", "user:2", "users", "use", "order:1"].map((k) => put(k))];
  assert.deepEqual(pageOf(given, list("user:")).names, ["user:1", "user:2"]);
  assert.deepEqual(pageOf(given, list("use")).names, ["use", "user:1", "user:2", "users"]);
  assert.deepEqual(pageOf(given, list("x")).names, []);
});

Deno.test("given a truncated snapshot, the batch's writes past its end wait for the next page", () => {
  const snapshot: KvPage = {
    entries: ["a", "c", "e"].map((key) => ({ key, expires_at: new Date(LATER), size: 1 })),
    truncated: true,
  };
  const changes = changesOf([put("b", "bb"), put("z"), del("c")]);
  const { keys, names, cursor } = pageOf(opened, list("", 2), { page: snapshot, changes });
  assert.deepEqual([names, cursor], [["a", "b"], { after: "b" }]);
  assert.equal(keys[1].size, 2);
  const shrunk = pageOf(opened, list("", 2), { page: snapshot, changes: changesOf([del("a"), del("c")]) });
  assert.deepEqual(
    [shrunk.names, shrunk.cursor],
    [["e"], { after: "e" }],
    "fewer than the limit, not the end",
  );
  const whole = pageOf(opened, list("", 2), { page: { ...snapshot, truncated: false }, changes });
  assert.deepEqual([whole.names, whole.cursor], [["a", "b"], { after: "b" }]);
});

Deno.test("a complete snapshot takes the batch's writes anywhere after the cursor", () => {
  const snapshot: KvPage = {
    entries: [{ key: "m", expires_at: new Date(LATER), size: 1 }],
    truncated: false,
  };
  const changes = changesOf([put("a"), put("z"), put("n")]);
  assert.deepEqual(pageOf(opened, list("", 100, "b"), { page: snapshot, changes }).names, ["m", "n", "z"]);
});

Deno.test("a cursor names its bucket and prefix; anything else is refused with a phrase", () => {
  const cursor = encodeCursor("b", "user:", "user:7");
  assert.deepEqual(decodeCursor(cursor, "b", "user:"), { after: "user:7" });
  assert.match(cursor, /^[A-Za-z0-9_-]+$/, "URL-safe");
  for (
    const [bad, bucket, prefix] of [[cursor, "b", ""], [cursor, "other", "user:"], ["!!", "b", ""], [
      "bm90IGpzb24",
      "b",
      "",
    ], [encodeCursor("b", "", ""), "b", ""]]
  ) {
    const decoded = decodeCursor(bad, bucket, prefix);
    assert.ok("phrase" in decoded, bad);
    assert.match(
      decoded.phrase,
      /^Invalid cursor ".*": must be a nextCursor of a listing of the same bucket/,
    );
  }
});

Deno.test("key order and prefix bounds work in code points", () => {
  assert.ok(compareKeys("\u{E000}", "\u{1F600}") < 0 && "\u{E000}" > "\u{1F600}", "JS order differs");
  assert.ok(compareKeys("a", "ab") < 0 && compareKeys("b", "ab") > 0 && compareKeys("x", "x") === 0);
  assert.equal(prefixEnd("ab"), "ac");
  assert.equal(prefixEnd("a\u{10FFFF}"), "b");
  assert.equal(prefixEnd("\uD7FF"), "\uE000", "skips the surrogates");
  assert.equal(prefixEnd("\u{1F600}"), "\u{1F601}");
  assert.equal(prefixEnd(""), undefined);
  assert.equal(utf8Length("aé€🎉"), 1 + 2 + 3 + 4);
});
