// Who counts as one client for POST /token's limit (one token every 10 s): an IPv6 client by its
// /64, every loopback address as one, an IPv4-mapped address as its IPv4 address, across instances
// sharing one database. The service trusts X-Forwarded-For in tests (TRUST_PROXY).
import assert from "node:assert/strict";
import { call } from "./helpers/client.ts";
import { embedded, type Service, startService } from "./helpers/service.ts";
import { inProcessService } from "./helpers/in_process.ts";

const form = { "content-type": "application/x-www-form-urlencoded" };

function askToken(svc: Service, from: string) {
  return call(svc, "POST", "/token", { body: "token=new", headers: { ...form, "x-forwarded-for": from } });
}

Deno.test("the token limit counts a client by its network", async (t) => {
  const svc = await startService();
  // The embedded database belongs to one process: a second instance needs Postgres.
  const other = embedded ? undefined : await startService({ sharedWith: svc });
  try {
    await t.step("two addresses of one IPv6 /64 share the limit; another /64 does not", async () => {
      assert.equal((await askToken(svc, "2001:db8:1:2::1")).status, 200);
      const sameNetwork = await askToken(svc, "2001:db8:1:2:ffff:ffff:ffff:fffe");
      assert.equal(sameNetwork.status, 429, "a second address of the /64 is the same client");
      assert.equal(sameNetwork.text, "Too Many Requests");
      const wait = Number(sameNetwork.headers.get("retry-after"));
      assert.ok(wait >= 1 && wait <= 10, `Retry-After ${wait}`);
      assert.equal((await askToken(svc, "2001:db8:1:3::1")).status, 200, "the next /64 is another client");
    });

    await t.step("every loopback address is one client, IPv4 and IPv6", async () => {
      assert.equal((await askToken(svc, "127.0.0.2")).status, 200);
      assert.equal((await askToken(svc, "127.0.0.3")).status, 429);
      assert.equal((await askToken(svc, "127.255.0.9")).status, 429);
      assert.equal((await askToken(svc, "::1")).status, 429);
    });

    await t.step("an IPv4-mapped IPv6 address is its IPv4 address", async () => {
      assert.equal((await askToken(svc, "203.0.113.50")).status, 200);
      assert.equal((await askToken(svc, "::ffff:203.0.113.50")).status, 429);
      assert.equal((await askToken(svc, "::ffff:203.0.113.51")).status, 200, "another IPv4 address");
    });

    await t.step({
      name: "the limit holds across instances of one database",
      ignore: other === undefined,
      async fn() {
        assert.equal((await askToken(svc, "2001:db8:9:9::1")).status, 200);
        assert.equal((await askToken(other!, "2001:db8:9:9:1::1")).status, 429, "the other instance knows");
        assert.equal((await askToken(other!, "::1")).status, 429, "loopback too");
      },
    });

    await t.step("what is not an address is one client, not one per text", async () => {
      assert.equal((await askToken(svc, "not-an-address")).status, 200);
      assert.equal((await askToken(svc, "another garbage")).status, 429);
    });
  } finally {
    await other?.dispose();
    await svc.dispose();
  }
});

Deno.test("the limit's table keeps the clients of the last seconds, keyed by network", async () => {
  const svc = await inProcessService();
  try {
    const ask = (from: string) =>
      svc.request("POST", "/token", { body: "token=new", headers: { ...form, "x-forwarded-for": from } });
    assert.equal((await ask("2001:db8:4:4:1::1")).status, 200);
    assert.equal((await ask("198.51.100.7")).status, 200);
    const rows = async () =>
      (await svc.db.sql<{ client_ip: string }[]>`select client_ip from token_requests order by client_ip`)
        .map((row) => row.client_ip);
    assert.deepEqual(await rows(), ["198.51.100.7", "2001:db8:4:4::/64"], "a network, never an address");
    svc.clock.advance(11_000);
    assert.equal((await ask("2001:db8:5:5::1")).status, 200);
    assert.deepEqual(await rows(), ["2001:db8:5:5::/64"], "rows past the interval are cleared");
  } finally {
    await svc.close();
  }
});
