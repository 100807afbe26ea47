// The new KV facts in the log: replay rebuilds counters, versions (the ETags) and listings from the
// events alone, the audit stays clean, and migration 012 gives existing entries the version replay
// would give them.
import assert from "node:assert/strict";
import { newToken, walletClient } from "./helpers/client.ts";
import { auditOf, embedded, runTask, startService } from "./helpers/service.ts";
import { withDatabase } from "./helpers/database.ts";
import { inProcessService } from "./helpers/in_process.ts";
import { migrate } from "../src/db/migrate.ts";
import { replayProjections } from "../src/tasks/replay.ts";

async function replayOf(svc: Awaited<ReturnType<typeof startService>>) {
  if (embedded) await svc.stop();
  try {
    return await runTask(svc, "replay");
  } finally {
    if (embedded) await svc.start();
  }
}

Deno.test("replay and audit cover increments and conditional writes", async () => {
  const svc = await startService();
  try {
    const kv = walletClient(svc, await newToken(svc));
    await kv.post("/kv/r/hits/incr?by=5");
    await kv.post("/kv/r/hits/incr?by=-2");
    await kv.post("/kv/r/text", "42");
    await kv.post("/kv/r/text/incr");
    await kv.post("/kv/r/gone/incr");
    await kv.delete("/kv/r/gone");
    const etag = (await kv.get("/kv/r/text")).headers.get("etag")!;
    assert.equal((await kv.post("/kv/r/text", "changed", { "if-match": etag })).status, 200);
    assert.equal((await kv.post("/kv/r/text", "lost", { "if-match": etag })).status, 412);
    assert.equal((await kv.post("/kv/r/new", "v", { "if-none-match": "*" })).status, 200);
    const before = (await kv.get("/kv/r")).text;
    const etags = await Promise.all(
      ["hits", "text", "new"].map(async (k) => (await kv.get(`/kv/r/${k}`)).headers),
    );

    const replay = await replayOf(svc);
    assert.equal(replay.code, 0, replay.stdout + replay.stderr);
    assert.match(replay.stdout, /kv_entries: 3 rows rebuilt, 0 differences/);
    const audit = await auditOf(svc);
    assert.equal(audit.code, 0, audit.stdout + audit.stderr);
    assert.equal((await kv.get("/kv/r/hits")).text, "3");
    assert.equal((await kv.get("/kv/r")).text, before, "the listing after a restart");
    const after = await Promise.all(
      ["hits", "text", "new"].map(async (k) => (await kv.get(`/kv/r/${k}`)).headers),
    );
    assert.deepEqual(after.map((h) => h.get("etag")), etags.map((h) => h.get("etag")));

    // A version that is not the one the log gives is a difference replay reports.
    await withDatabase(svc, ({ sql }) => sql`update kv_entries set version = version + 1 where key = 'hits'`);
    const tampered = await replayOf(svc);
    assert.equal(tampered.code, 1);
    assert.match(tampered.stdout, /kv_entries: 3 rows rebuilt, 2 differences/);
  } finally {
    await svc.dispose();
  }
});

Deno.test("migration 012 gives existing entries the version of the event that last wrote them", async () => {
  // A log written in clear, as the migration met it (before issue 23 sealed the KV fields).
  const svc = await inProcessService({}, { sealer: undefined });
  try {
    const token = await svc.newToken();
    const call = (method: string, path: string, body?: string) => svc.request(method, path, { token, body });
    await call("POST", "/kv/m/a", "1");
    await call("POST", "/kv/m/b", "1");
    await call("POST", "/kv/m/a", "2");
    await call("POST", "/kv/m/c", "1");
    await call("DELETE", "/kv/m/c");
    await call("POST", "/kv/m/c", "again");
    const etags = await Promise.all(
      ["a", "b", "c"].map(async (k) => (await call("GET", `/kv/m/${k}`)).headers),
    );
    // Back to the table as it was before the migration, then migrate again.
    const sql = svc.db.sql;
    await sql`alter table kv_entries drop column version`;
    await sql`alter table kv_entries alter column key type text collate "default"`;
    await sql`delete from schema_migrations where version = '012_kv_versions.sql'`;
    assert.deepEqual(await migrate(sql), ["012_kv_versions.sql"]);
    const again = await Promise.all(
      ["a", "b", "c"].map(async (k) => (await call("GET", `/kv/m/${k}`)).headers),
    );
    assert.deepEqual(again.map((h) => h.get("etag")), etags.map((h) => h.get("etag")));
    const kvTable = (await replayProjections(sql)).tables.find((t) => t.table === "kv_entries")!;
    assert.deepEqual([kvTable.rows, kvTable.onlyLive, kvTable.onlyReplayed], [3, 0, 0]);
  } finally {
    await svc.close();
  }
});
