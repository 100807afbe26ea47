// A scoped key's gate runs before any charge and any Idempotency-Key outcome, a mistaken reuse of a
// key leaves the kept answer as it was, and each caller's Idempotency-Keys are its own: through
// real HTTP, as a client recovering from "outcome unknown" would use them.
import assert from "node:assert/strict";
import { newToken, walletClient } from "./helpers/client.ts";
import { auditOf, startService } from "./helpers/service.ts";

type Client = ReturnType<typeof walletClient>;

async function makeKey(owner: Client, rules: Record<string, unknown>) {
  const res = await owner.postJson("/token/keys", { name: "gate test", ...rules });
  assert.equal(res.status, 200, res.text);
  return res.json() as { id: string; key: string };
}

const balanceOf = async (owner: Client) => (await owner.get("/token")).json().wallet as number;

Deno.test("idempotency and the key's gate", async (t) => {
  const svc = await startService();
  try {
    await t.step("a capped read key reusing a key for other requests never spends past its cap", async () => {
      const owner = walletClient(svc, await newToken(svc));
      const { id, key } = await makeKey(owner, { scope: "read", buckets: ["only"], spendCap: 2 });
      const reader = walletClient(svc, key);
      const before = await balanceOf(owner);
      const attempts = [
        () => reader.post("/kv/other/a", "one", { "idempotency-key": "same" }),
        () => reader.post("/kv/other/a", "two", { "idempotency-key": "same" }),
        () => reader.post("/kv/only/a", "three", { "idempotency-key": "same" }),
        () => reader.delete("/kv/elsewhere/a", { "idempotency-key": "same" }),
        () => reader.postJson("/webhook", { url: "https://example.com/h" }, { "idempotency-key": "same" }),
        () => reader.post("/kv/other/b", "x", { "idempotency-key": "another" }),
      ];
      const answers = [];
      for (let round = 0; round < 3; round++) {
        answers.push(...await Promise.all(attempts.map((send) => send())));
      }
      const statuses = new Set(answers.map((a) => a.status));
      assert.ok(!statuses.has(422), `a key's refused call never reaches its mismatch: ${[...statuses]}`);
      assert.ok([...statuses].every((s) => s === 402 || s === 403), [...statuses].join(", "));
      const after = await balanceOf(owner);
      // The two GET /token of this step cost 1 each: one before, one after the key's calls.
      assert.equal(before - after - 1, 2, "the wallet paid exactly the key's cap");
      const listed = (await owner.get("/token/keys")).json().keys.find((k: { id: string }) => k.id === id);
      assert.equal(listed.spent, 2);
    });

    await t.step("a mismatched reuse gets 422 and the first answer is still replayed", async () => {
      const owner = walletClient(svc, await newToken(svc));
      const first = await owner.post("/kv/b/k", "v1", { "idempotency-key": "kept" });
      assert.deepEqual([first.status, first.cost], [200, 1]);
      const other = await owner.post("/kv/b/k", "v2", { "idempotency-key": "kept" });
      assert.equal(other.status, 422);
      assert.equal(other.text, 'Idempotency-Key "kept" was already used for a different request');
      const retry = await owner.post("/kv/b/k", "v1", { "idempotency-key": "kept" });
      assert.deepEqual([retry.status, retry.text, retry.cost], [200, "OK", 1]);
      assert.equal(retry.headers.get("idempotent-replayed"), "true");
      assert.equal((await owner.get("/kv/b/k")).text, "v1", "the mismatched request changed nothing");
    });

    await t.step("a scoped key's Idempotency-Keys never meet the token's or another key's", async () => {
      const owner = walletClient(svc, await newToken(svc));
      const writer = walletClient(svc, (await makeKey(owner, { scope: "write" })).key);
      const second = walletClient(svc, (await makeKey(owner, { scope: "write" })).key);
      const byToken = await owner.post("/kv/b/shared", "token's", { "idempotency-key": "k" });
      assert.equal(byToken.status, 200);
      // The same key with another body from a scoped key is its own request, not the token's mismatch.
      const byKey = await writer.post("/kv/b/shared", "key's", { "idempotency-key": "k" });
      assert.deepEqual([byKey.status, byKey.headers.get("idempotent-replayed")], [200, null]);
      const bySecond = await second.post("/kv/b/shared", "token's", { "idempotency-key": "k" });
      assert.deepEqual([bySecond.status, bySecond.headers.get("idempotent-replayed")], [200, null]);
      // Each caller's retry gets its own first answer, charged nothing more.
      for (const [client, body] of [[owner, "token's"], [writer, "key's"], [second, "token's"]] as const) {
        const retry = await client.post("/kv/b/shared", body, { "idempotency-key": "k" });
        assert.deepEqual([retry.status, retry.headers.get("idempotent-replayed")], [200, "true"]);
      }
      // A key's mismatch leaves the token's kept answer untouched.
      assert.equal((await writer.post("/kv/b/shared", "other", { "idempotency-key": "k" })).status, 422);
      const tokenRetry = await owner.post("/kv/b/shared", "token's", { "idempotency-key": "k" });
      assert.equal(tokenRetry.headers.get("idempotent-replayed"), "true");
    });

    await t.step("the audit is clean", async () => {
      assert.equal((await auditOf(svc)).code, 0);
    });
  } finally {
    await svc.dispose();
  }
});
