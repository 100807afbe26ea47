// Nothing is stored forever for free: a wallet's calls that charge nothing (free routes, 402s, a
// key's refusals) have an allowance a minute and a day, past which they get 429 and write nothing;
// mail refused for a wallet has a daily allowance of its own; and what one call writes into the
// permanent log is bounded, whatever the caller sent.
import assert from "node:assert/strict";
import { type InProcessService, inProcessService } from "./helpers/in_process.ts";
import { sha256Hex } from "../src/ids.ts";
import { FREE_CALLS_PER_DAY, FREE_CALLS_PER_MINUTE, REFUSED_MAILS_PER_DAY } from "../projections/wallets.ts";
import { refusedEmailCommand } from "../src/email/commands.ts";
import { MAX_LOGGED_PATH_BYTES, MAX_LOGGED_QUERY_BYTES } from "../src/ledger/call_bounds.ts";

const test = (name: string, fn: (svc: InProcessService) => Promise<void>) =>
  Deno.test({
    name,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const svc = await inProcessService();
      try {
        await fn(svc);
      } finally {
        await svc.close();
      }
    },
  });

/** Moves the service's clock to `intoMs` after the start of the next period of `periodMs`. */
function alignClock(svc: InProcessService, periodMs: number, intoMs = 500) {
  const now = svc.clock.now().getTime();
  svc.clock.advance(Math.ceil(now / periodMs) * periodMs + intoMs - now);
}

async function eventCount(svc: InProcessService, token: string): Promise<number> {
  const [row] = await svc.db.sql`select count(*)::int as n from events where wallet_id = ${await sha256Hex(
    token,
  )}`;
  return row.n;
}

test("free calls past the minute's allowance get 429 with Retry-After and write nothing", async (svc) => {
  const token = await svc.newToken();
  alignClock(svc, 60_000);
  for (let i = 0; i < FREE_CALLS_PER_MINUTE; i++) {
    const res = await svc.request("GET", "/recharge", { token });
    assert.equal(res.status, 200, `free call ${i + 1}`);
  }
  const events = await eventCount(svc, token);
  for (let i = 0; i < 5; i++) {
    const refused = await svc.request("GET", "/recharge", { token });
    assert.equal(refused.status, 429);
    assert.equal(refused.text, "Too Many Requests");
    const wait = Number(refused.headers.get("retry-after"));
    assert.ok(wait >= 1 && wait <= 60, `Retry-After ${wait}`);
    assert.deepEqual([refused.headers.get("x-cost"), refused.headers.get("x-balance")], ["0", "100"]);
  }
  assert.equal(await eventCount(svc, token), events, "the refused calls wrote nothing");
  // A paid call is not held to it.
  assert.equal((await svc.request("GET", "/token", { token })).status, 200);
  svc.clock.advance(60_000);
  assert.equal((await svc.request("GET", "/recharge", { token })).status, 200, "the next minute has room");
});

test("refused calls that charge nothing count too: a drained wallet's 402s stop being written", async (svc) => {
  const token = await svc.newToken();
  for (let i = 0; i < 100; i++) await svc.request("POST", `/kv/b/k${i}`, { token, body: "v" });
  alignClock(svc, 60_000);
  const statuses = [];
  for (let i = 0; i < FREE_CALLS_PER_MINUTE + 3; i++) {
    statuses.push((await svc.request("GET", "/kv/b/k1", { token })).status);
  }
  assert.deepEqual(statuses, [...Array(FREE_CALLS_PER_MINUTE).fill(402), 429, 429, 429]);
});

test("the day's allowance holds across minutes until the next UTC day", async (svc) => {
  const token = await svc.newToken();
  alignClock(svc, 86_400_000, 1000);
  let made = 0;
  while (made < FREE_CALLS_PER_DAY) {
    for (let i = 0; i < FREE_CALLS_PER_MINUTE && made < FREE_CALLS_PER_DAY; i++, made++) {
      assert.equal((await svc.request("GET", "/recharge", { token })).status, 200);
    }
    svc.clock.advance(60_000);
  }
  const refused = await svc.request("GET", "/recharge", { token });
  assert.equal(refused.status, 429);
  const wait = Number(refused.headers.get("retry-after"));
  assert.ok(wait > 3600, `waits for the next UTC day: ${wait} s`);
  svc.clock.advance(wait * 1000);
  assert.equal((await svc.request("GET", "/recharge", { token })).status, 200);
});

test("a logged call keeps a bounded path: its query cut first, each part ending in …", async (svc) => {
  const token = await svc.newToken();
  const query = `amount=1&pad=${"q".repeat(15_000)}`;
  assert.equal((await svc.request("GET", `/recharge?${query}`, { token })).status, 200);
  const longKey = encodeURIComponent("ü".repeat(30));
  assert.equal((await svc.request("GET", `/kv/${longKey}/${longKey}?${query}`, { token })).status, 404);
  const logs = await svc.request("GET", "/token/logs?n=2&views=include", { token });
  const [kv, recharge] = JSON.parse(logs.text).logs as { path: string }[];
  const bytes = (text: string) => new TextEncoder().encode(text).length;
  for (const { path } of [kv, recharge]) {
    const [before, after] = path.split("?");
    assert.ok(bytes(before) <= MAX_LOGGED_PATH_BYTES + 3, path);
    assert.ok(after.endsWith("…") && bytes(after) <= MAX_LOGGED_QUERY_BYTES + 3, after);
  }
  assert.ok(recharge.path.startsWith("/recharge?amount=1&pad=qqq"));
  assert.equal(kv.path.split("?")[0], `/kv/${longKey}/${longKey}`, "a KV path fits whole");
  const [largest] = await svc.db.sql`
    select max(octet_length(data::text))::int as n from events
    where wallet_id = ${await sha256Hex(token)} and type = 'CallBilled'`;
  assert.ok(largest.n < 1024, `the largest CallBilled holds ${largest.n} bytes`);
});

test("refused mail has an allowance of its own a day: past it nothing is logged, the owner's calls untouched", async (svc) => {
  const token = await svc.newToken();
  const walletId = await sha256Hex(token);
  alignClock(svc, 86_400_000, 1000);
  const refuse = () =>
    svc.ledger.runBilled(
      refusedEmailCommand({
        walletId,
        recipient: "r_x@mail.localhost",
        reason: "parse bomb",
        startedAt: performance.now(),
      }),
    );
  for (let i = 0; i < REFUSED_MAILS_PER_DAY; i++) await refuse();
  const events = await eventCount(svc, token);
  for (let i = 0; i < 5; i++) assert.equal((await refuse()).kind, "answered");
  assert.equal(await eventCount(svc, token), events, "the refusals past the allowance wrote nothing");
  const recharge = await svc.request("GET", "/recharge", { token });
  assert.equal(recharge.status, 200, "a stranger's mail spends none of the owner's free calls");
  svc.clock.advance(86_400_000);
  await refuse();
  assert.equal(await eventCount(svc, token), events + 2, "the next day logs again");
});
