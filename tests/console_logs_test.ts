// The console's own calls stay out of the way (issue 27): the free views a console opens with
// (usage, ledger, recharge links, schedule preview) are logged, but GET /token/logs leaves them out
// unless `views=include` asks, so the user's calls come first and are what the view charges for.
import assert from "node:assert/strict";
import { newToken, walletClient } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";

Deno.test({
  name: "call log: the free views are left out unless asked for",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const svc = await startService();
    try {
      const client = walletClient(svc, await newToken(svc));
      assert.equal((await client.post("/kv/notes/first", "one")).status, 200);
      // What the dashboard calls when it opens, between two of the user's calls.
      for (
        const path of [
          "/token/usage?days=30",
          "/token/ledger?limit=20",
          "/recharge?amount=1",
          "/recharge?amount=3",
          "/schedule-preview?cron=0+9+*+*+*&timezone=UTC",
          "/token/usage?days=bad",
        ]
      ) {
        const answer = await client.get(path);
        assert.equal(answer.cost, 0, path);
      }
      assert.equal((await client.get("/kv/notes/first")).status, 200);

      const shown = await client.get("/token/logs?n=5");
      assert.equal(shown.status, 200, shown.text);
      const entries = shown.json().logs;
      assert.deepEqual(entries.map((l: any) => [l.method, l.path]), [
        ["GET", "/kv/notes/first"],
        ["POST", "/kv/notes/first"],
      ]);
      assert.equal(shown.cost, 2, "one credit per entry shown");

      const all = await client.get("/token/logs?n=10&views=include");
      const paths = all.json().logs.map((l: any) => l.path);
      assert.deepEqual(paths, [
        "/token/logs?n=5",
        "/kv/notes/first",
        "/token/usage?days=bad",
        "/schedule-preview?cron=0+9+*+*+*&timezone=UTC",
        "/recharge?amount=3",
        "/recharge?amount=1",
        "/token/ledger?limit=20",
        "/token/usage?days=30",
        "/kv/notes/first",
      ]);
      assert.equal(all.cost, 9);
      // The filter and the type go together; a paid call to a view's path would still show.
      const token = await client.get("/token/logs?n=10&type=token");
      assert.deepEqual(token.json().logs.map((l: any) => l.path), [
        "/token/logs?n=10&views=include",
        "/token/logs?n=5",
      ]);
      const bad = await client.get("/token/logs?views=all");
      assert.deepEqual([bad.status, bad.text], [400, "Invalid views: must be exclude or include"]);
    } finally {
      await svc.dispose();
    }
  },
});
