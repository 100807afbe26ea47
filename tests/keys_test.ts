// Scoped keys through real HTTP: made, listed and revoked with the wallet token; a key authenticates
// like the token, bills the same wallet, and is held to its scope, buckets, spend cap and expiry.
import assert from "node:assert/strict";
import { call, newToken, walletClient } from "./helpers/client.ts";
import { auditOf, embedded, startService } from "./helpers/service.ts";

type Client = ReturnType<typeof walletClient>;

async function makeKey(owner: Client, rules: Record<string, unknown>) {
  const res = await owner.postJson("/token/keys", { name: "test key", ...rules });
  assert.equal(res.status, 200, res.text);
  return res.json() as { id: string; key: string };
}

Deno.test("scoped keys", async (t) => {
  const svc = await startService();
  try {
    const owner = walletClient(svc, await newToken(svc));

    await t.step("POST /token/keys shows the key once, costs 1, and stores only its hash", async () => {
      const res = await owner.postJson("/token/keys", {
        name: "browser",
        scope: "read",
        buckets: ["public", "public"],
        spendCap: 50,
        expiresAt: "2099-01-01T00:00:00+01:00",
      });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual([res.cost, res.balance], [1, 99]);
      const body = res.json();
      assert.match(body.key, /^k_[A-Za-z0-9]{32}$/);
      assert.match(body.id, /^key_[a-z0-9]{16}$/);
      assert.deepEqual(
        { ...body, key: undefined, id: undefined, createdAt: undefined },
        {
          name: "browser",
          scope: "read",
          buckets: ["public"],
          spendCap: 50,
          expiresAt: "2098-12-31T23:00:00.000Z",
          key: undefined,
          id: undefined,
          createdAt: undefined,
        },
      );
      const listed = await owner.get("/token/keys");
      assert.deepEqual([listed.status, listed.cost], [200, 1]);
      const [key] = listed.json().keys;
      assert.equal(key.id, body.id);
      assert.deepEqual([key.spent, key.lastUsedAt, key.state], [0, null, "active"]);
      assert.ok(!listed.text.includes(body.key), "never the secret");
      assert.ok(!("key" in key) && !("hash" in key));
    });

    await t.step("bad key definitions are 400, billed, and make no key", async () => {
      const before = (await owner.get("/token/keys")).json().keys.length;
      const cases: [unknown, RegExp][] = [
        [{ scope: "read" }, /^Invalid name: /],
        [{ name: "x", scope: "admin" }, /^Invalid scope: must be "read" or "write"$/],
        [{ name: "x", scope: "read", buckets: [] }, /^Invalid buckets: must name 1 to 20 buckets$/],
        [{ name: "x", scope: "read", buckets: ["reserved-x"] }, /^Invalid buckets\.0: must not start/],
        [{ name: "x", scope: "read", spendCap: 0 }, /^Invalid spendCap: must be an integer from 1/],
        [{ name: "x", scope: "read", expiresAt: "tomorrow" }, /^Invalid expiresAt: must be an ISO 8601/],
        [{ name: "x", scope: "read", expiresAt: "2001-01-01T00:00:00Z" }, /must be in the future$/],
        [{ name: "x", scope: "read", admin: true }, /^Unknown field: admin$/],
        ["[1]", /^Invalid request: /],
      ];
      for (const [input, phrase] of cases) {
        const res = typeof input === "string"
          ? await owner.post("/token/keys", input)
          : await owner.postJson("/token/keys", input);
        assert.equal(res.status, 400, JSON.stringify(input));
        assert.match(res.text, phrase);
        assert.equal(res.cost, 1);
      }
      assert.equal((await owner.get("/token/keys")).json().keys.length, before);
    });

    await t.step(
      "a read key: GET in its buckets bills the wallet; writes and other buckets are 403",
      async () => {
        await owner.post("/kv/public/greeting", "hello");
        await owner.post("/kv/private/secret", "s3cret");
        const { id, key } = await makeKey(owner, { scope: "read", buckets: ["public"] });
        const reader = walletClient(svc, key);
        const before = (await owner.get("/token")).json().wallet;
        const got = await reader.get("/kv/public/greeting");
        assert.deepEqual([got.status, got.text, got.cost, got.balance], [200, "hello", 1, before - 1]);
        const write = await reader.post("/kv/public/greeting", "changed");
        assert.equal(write.status, 403);
        assert.equal(
          write.text,
          `Forbidden: key "${id}" is read-only: its scope "read" allows GET and list only`,
        );
        assert.equal(write.cost, 1, "a 403 is billed like other refused input");
        const other = await reader.get("/kv/private/secret");
        assert.equal(other.status, 403);
        assert.match(other.text, /may not use bucket "private": it may use "public"$/);
        const listed = await reader.get("/kv/public?prefix=gr");
        assert.deepEqual([listed.status, listed.json().keys.map((k: any) => k.key)], [200, ["greeting"]]);
        assert.equal((await reader.get("/kv/private")).status, 403, "nor list another bucket");
        const incr = await reader.post("/kv/public/count/incr");
        assert.deepEqual([incr.status, incr.cost], [403, 1], "an increment is a write");
        assert.equal((await owner.get("/kv/public/greeting")).text, "hello", "nothing changed");
      },
    );

    await t.step("a write key writes, deletes; every other route and key management is 403", async () => {
      const { key } = await makeKey(owner, { scope: "write" });
      const writer = walletClient(svc, key);
      assert.equal((await writer.post("/kv/any/k?ttl=60", "v")).status, 200);
      assert.equal((await writer.delete("/kv/any/k")).status, 200);
      const counted = await writer.post("/kv/any/n/incr?by=3");
      assert.deepEqual([counted.status, counted.text], [200, "3"]);
      const bad = await writer.get("/kv/reserved-x/k");
      assert.equal(bad.status, 400, "bad input is still 400 for a key that may use the bucket");
      for (
        const [method, path] of [
          ["GET", "/token"],
          ["GET", "/token/logs"],
          ["GET", "/token/keys"],
          ["POST", "/token/keys"],
          ["DELETE", "/token/keys/key_x"],
          ["GET", "/webhook"],
          ["POST", "/webhook"],
          ["GET", "/token/settings"],
          ["GET", "/recharge"],
        ]
      ) {
        const res = await call(svc, method, path, {
          token: key,
          body: method === "POST" ? "{}" : undefined,
        });
        assert.equal(res.status, 403, `${method} ${path}`);
        assert.match(res.text, /^Forbidden: a scoped key may call only the key-value routes/);
      }
    });

    await t.step("the logs show which key made each call", async () => {
      const { id, key } = await makeKey(owner, { scope: "read" });
      await walletClient(svc, key).get("/kv/public/greeting");
      const logs = (await owner.get("/token/logs?n=2")).json().logs;
      assert.deepEqual([logs[0].path, logs[0].keyId], ["/kv/public/greeting", id]);
      assert.equal(logs[1].path, "/token/keys");
      assert.equal("keyId" in logs[1], false, "the token's own call");
    });

    await t.step("past its spend cap a key gets 402 Spend cap reached, charged nothing", async () => {
      const { id, key } = await makeKey(owner, { scope: "write", spendCap: 3 });
      const capped = walletClient(svc, key);
      const statuses = [];
      for (let i = 0; i < 5; i++) statuses.push((await capped.post(`/kv/b/k${i}`, "v")).status);
      assert.deepEqual(statuses, [200, 200, 200, 402, 402]);
      const refused = await capped.get("/kv/b/k0");
      assert.deepEqual([refused.status, refused.text, refused.cost], [402, "Spend cap reached", 0]);
      const listed = (await owner.get("/token/keys")).json().keys.find((k: any) => k.id === id);
      assert.equal(listed.spent, 3);
      assert.ok(Date.now() - Date.parse(listed.lastUsedAt) < 60_000);
    });

    await t.step("concurrent calls of one key never spend past its cap", async () => {
      const { id, key } = await makeKey(owner, { scope: "read", spendCap: 5 });
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => call(svc, "GET", "/kv/public/greeting", { token: key })),
      );
      assert.deepEqual(answers.map((a) => a.status).filter((s) => s === 200).length, 5);
      assert.ok(answers.every((a) => a.status === 200 || a.status === 402));
      const listed = (await owner.get("/token/keys")).json().keys.find((k: any) => k.id === id);
      assert.equal(listed.spent, 5);
    });

    await t.step("revoking answers 401 Key revoked at once; the key cannot revoke itself", async () => {
      const { id, key } = await makeKey(owner, { scope: "read" });
      const reader = walletClient(svc, key);
      assert.equal((await reader.get("/kv/public/greeting")).status, 200); // remembered by the instance
      const revoked = await owner.delete(`/token/keys/${id}`);
      assert.deepEqual([revoked.status, revoked.text, revoked.cost], [200, "OK", 1]);
      const after = await reader.get("/kv/public/greeting");
      assert.deepEqual([after.status, after.text], [401, "Key revoked"]);
      assert.equal(after.headers.get("x-balance"), null, "a revoked key learns nothing of the wallet");
      assert.equal((await owner.delete(`/token/keys/${id}`)).status, 200, "revoking again is OK");
      const unknown = await owner.delete("/token/keys/key_unknown");
      assert.deepEqual([unknown.status, unknown.text], [404, 'Key "key_unknown" not found']);
      const listed = (await owner.get("/token/keys")).json().keys.find((k: any) => k.id === id);
      assert.equal(listed.state, "revoked");
      assert.ok(listed.revokedAt);
    });

    await t.step("past expiresAt a key gets 401 Key expired", async () => {
      const { key } = await makeKey(owner, {
        scope: "read",
        expiresAt: new Date(Date.now() + 1500).toISOString(),
      });
      assert.equal((await call(svc, "GET", "/kv/public/greeting", { token: key })).status, 200);
      await new Promise((resolve) => setTimeout(resolve, 1600));
      const late = await call(svc, "GET", "/kv/public/greeting", { token: key });
      assert.deepEqual([late.status, late.text], [401, "Key expired"]);
    });

    await t.step("an unknown key is 401 Unauthorized", async () => {
      const res = await call(svc, "GET", "/kv/public/greeting", { token: "k_" + "x".repeat(32) });
      assert.deepEqual([res.status, res.text], [401, "Unauthorized"]);
    });

    await t.step(
      "a retried creation with its Idempotency-Key makes no second key and shows no secret",
      async () => {
        const headers = { "idempotency-key": "make-key-1" };
        const first = await owner.postJson("/token/keys", { name: "once", scope: "read" }, headers);
        const again = await owner.postJson("/token/keys", { name: "once", scope: "read" }, headers);
        const { id, key } = first.json();
        assert.equal(again.status, 409);
        assert.match(again.text, new RegExp(`^Key "${id}" was already created with this Idempotency-Key`));
        assert.ok(!again.text.includes(key));
        assert.equal(again.headers.get("idempotent-replayed"), "true");
        const named = (await owner.get("/token/keys")).json().keys.filter((k: any) => k.name === "once");
        assert.equal(named.length, 1);
      },
    );

    await t.step("the audit agrees with every key's calls", async () => {
      const audit = await auditOf(svc);
      assert.equal(audit.code, 0, audit.stdout + audit.stderr);
    });
  } finally {
    await svc.dispose();
  }
});

Deno.test({
  name: embedded
    ? "key revocation across instances (skipped: the embedded database is single-process; set DATABASE_URL)"
    : "a key revoked on one instance is refused at once by another that remembered it",
  ignore: embedded,
  async fn() {
    const first = await startService();
    const second = await startService({ sharedWith: first });
    try {
      const owner = walletClient(first, await newToken(first));
      await owner.post("/kv/b/k", "v");
      const { id, key } = await makeKey(owner, { scope: "read" });
      assert.equal((await call(second, "GET", "/kv/b/k", { token: key })).status, 200);
      assert.equal((await owner.delete(`/token/keys/${id}`)).status, 200);
      const after = await call(second, "GET", "/kv/b/k", { token: key });
      assert.deepEqual([after.status, after.text], [401, "Key revoked"]);
    } finally {
      await second.dispose();
      await first.dispose();
    }
  },
});
