// A flood of invalid tokens costs the database a bounded number of lookups: a token it said is
// unknown is answered 401 again from memory, and each client has a budget of lookups that find
// nothing (UNKNOWN_TOKEN_LOOKUPS_PER_MINUTE), past which an unknown token gets 429 with
// Retry-After. Valid tokens are never refused for it. Counted two ways: the app in this process on
// a database handle that counts its queries (both database modes), and the real service behind a
// fault proxy that cuts Postgres, where a lookup is a 503 and an answer from memory is not.
import assert from "node:assert/strict";
import { call } from "./helpers/client.ts";
import { embedded, startService } from "./helpers/service.ts";
import { startFaultProxy } from "./helpers/fault_proxy.ts";
import { countedApp } from "./helpers/counted_app.ts";
import { newToken, sha256Hex } from "../src/ids.ts";
import { openWalletCommand } from "../src/wallets/open_wallet.ts";

const BUDGET = 10;
const form = { "content-type": "application/x-www-form-urlencoded" };

function randomToken(): string {
  return newToken();
}

function randomKey(): string {
  return `k_${newToken()}${newToken()}`.slice(0, 45);
}

Deno.test("a flood of invalid tokens makes a bounded number of lookups; valid tokens pass", async (t) => {
  const app = await countedApp({ UNKNOWN_TOKEN_LOOKUPS_PER_MINUTE: String(BUDGET) });
  try {
    const request = async (token: string, from: string) => {
      const res = await app.fetch("/token", { headers: { "x-token": token }, from });
      return { status: res.status, text: await res.text(), retryAfter: res.headers.get("retry-after") };
    };
    /** A wallet made without POST /token, so no cache of this process knows its token. */
    const unseenToken = async () => {
      const token = randomToken();
      await app.ledger.appendUnbilled(openWalletCommand(await sha256Hex(token), token, `unseen-${token}`));
      return token;
    };

    const created = await app.fetch("/token", {
      method: "POST",
      body: "token=new",
      headers: form,
      from: "198.51.100.1",
    });
    const valid = await created.text();

    await t.step("200 random tokens and keys from one client: at most its budget of lookups", async () => {
      const before = app.queries();
      const answers = [];
      for (let i = 0; i < 200; i++) {
        answers.push(await request(i % 4 === 0 ? randomKey() : randomToken(), "2001:db8:66:1::1"));
      }
      const lookups = app.queries() - before;
      // One more lookup may fit per 60/BUDGET s while the flood runs: a generous bound on its time.
      assert.ok(lookups <= BUDGET + 2, `${lookups} lookups`);
      const unauthorized = answers.filter((a) => a.status === 401);
      const limited = answers.filter((a) => a.status === 429);
      assert.equal(unauthorized.length + limited.length, 200);
      assert.equal(unauthorized.length, lookups, "a 401 for each lookup, no more");
      assert.ok(limited.every((a) => a.text === "Too Many Requests" && Number(a.retryAfter) >= 1));
    });

    await t.step("the other addresses of the client's /64 share its budget", async () => {
      const before = app.queries();
      const other = await request(randomToken(), "2001:db8:66:1:ffff::2");
      assert.equal(other.status, 429);
      assert.equal(app.queries(), before, "no lookup");
    });

    await t.step("one invalid token repeated is looked up once", async () => {
      const before = app.queries();
      const token = randomToken();
      for (let i = 0; i < 50; i++) {
        const answer = await request(token, `203.0.113.${(i % 5) + 1}`);
        assert.deepEqual([answer.status, answer.text], [401, "Unauthorized"]);
      }
      assert.equal(app.queries() - before, 1);
    });

    await t.step("valid tokens are never refused, nor spend the budget", async () => {
      assert.equal((await request(valid, "2001:db8:66:1::1")).status, 200, "from the flooding client");
      const before = app.queries();
      for (let i = 0; i < BUDGET + 5; i++) {
        const answer = await request(await unseenToken(), "198.51.100.77");
        assert.equal(answer.status, 200, `unseen valid token ${i}: ${answer.text}`);
      }
      assert.equal(app.queries() - before, BUDGET + 5, "each looked up once, none refused");
      const invalid = await request(randomToken(), "198.51.100.77");
      assert.equal(invalid.status, 401, "the client's budget is whole: valid lookups gave theirs back");
    });

    await t.step("past its budget, a client's unseen valid token is told to retry, never 401", async () => {
      const answer = await request(await unseenToken(), "2001:db8:66:1::1");
      assert.equal(answer.status, 429);
      assert.ok(Number(answer.retryAfter) >= 1);
    });
  } finally {
    await app.close();
  }
});

Deno.test({
  name: "with Postgres cut, a cached refusal still answers 401 and a flood makes few lookups",
  ignore: embedded, // The embedded PGlite runs in the process: there is no connection to cut.
  async fn() {
    const pg = new URL(Deno.env.get("DATABASE_URL")!);
    const proxy = startFaultProxy({ hostname: pg.hostname, port: Number(pg.port || 5432) });
    const svc = await startService({
      env: { UNKNOWN_TOKEN_LOOKUPS_PER_MINUTE: String(BUDGET), DATABASE_TIMEOUT_MS: "500" },
      routeDatabase: (url) => proxy.urlFor(url),
    });
    try {
      const get = (token: string, from: string) =>
        call(svc, "GET", "/token", { token, headers: { "x-forwarded-for": from } });
      const known = randomToken();
      assert.equal((await get(known, "198.51.100.5")).status, 401, "looked up once, found unknown");

      proxy.refuse();
      proxy.cut();
      assert.deepEqual(
        [(await get(known, "198.51.100.6")).status, (await get(known, "198.51.100.6")).text],
        [401, "Unauthorized"],
        "answered from memory while the database is away",
      );
      const statuses: number[] = [];
      for (let round = 0; round < 5; round++) {
        const answers = await Promise.all(
          Array.from({ length: 10 }, () => get(randomToken(), "2001:db8:77:1::1")),
        );
        statuses.push(...answers.map((a) => a.status));
      }
      const lookups = statuses.filter((s) => s === 503).length;
      assert.ok(lookups <= BUDGET + 1, `${lookups} of 50 tried the database`);
      assert.equal(statuses.filter((s) => s === 429).length, 50 - lookups, "the rest: 429, no lookup");
    } finally {
      proxy.accept();
      await svc.dispose();
      await proxy.close();
    }
  },
});
