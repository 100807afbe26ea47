// The master key: made in DATA_DIR (0600) on the embedded database, required on Postgres, checked
// at start (a wrong key is refused, never read as empty), and rotated by a task that re-wraps the
// data keys without touching an event, after which every read and the replay still work.
import assert from "node:assert/strict";
import { newToken, walletClient } from "./helpers/client.ts";
import { embedded, runTask, startService, TEST_MASTER_KEY } from "./helpers/service.ts";
import { generateMasterKeyText, parseMasterKey } from "../src/secrets/master_key.ts";

async function startFails(env: Record<string, string>): Promise<string> {
  const error = await startService({ env }).then(
    async (svc) => {
      await svc.dispose();
      return undefined;
    },
    (e: Error) => e.message,
  );
  assert.ok(error, "the service started");
  return error;
}

Deno.test("a master key that is not base64 of 32 bytes is refused with its source named", async () => {
  await assert.rejects(
    parseMasterKey("c2hvcnQ=", "MASTER_KEY"),
    /Invalid master key in MASTER_KEY: must be base64/,
  );
  await assert.rejects(parseMasterKey("not base64!", "MASTER_KEY_FILE"), /in MASTER_KEY_FILE/);
  const key = await parseMasterKey(generateMasterKeyText(), "MASTER_KEY");
  assert.match(key.id, /^[0-9a-f]{16}$/);
});

Deno.test("without a master key: embedded makes one (0600), Postgres refuses to start", async () => {
  if (embedded) {
    const svc = await startService();
    try {
      const file = `${svc.env.DATA_DIR}/master.key`;
      assert.equal((await Deno.stat(file)).mode! & 0o777, 0o600);
      assert.ok((await parseMasterKey(await Deno.readTextFile(file), file)).id);
    } finally {
      await svc.dispose();
    }
  } else {
    const refused = await startFails({ MASTER_KEY: "" });
    assert.match(refused, /No master key: set MASTER_KEY or MASTER_KEY_FILE/);
    const svc = await startService({ env: { MASTER_KEY: "", UNSAFE_MASTER_KEY_IN_DATABASE: "1" } });
    try {
      assert.match(svc.output(), /UNSAFE_MASTER_KEY_IN_DATABASE is on/);
      const kv = walletClient(svc, await newToken(svc));
      assert.equal((await kv.post("/kv/b/k", "kept")).status, 200);
    } finally {
      await svc.dispose();
    }
  }
});

Deno.test("a wrong master key stops the start; rotation re-wraps and every read keeps working", async (t) => {
  const svc = await startService();
  try {
    const kv = walletClient(svc, await newToken(svc));
    assert.equal((await kv.post("/kv/notes/first", "written before the rotation")).status, 200);
    const oldKey = embedded
      ? (await Deno.readTextFile(`${svc.env.DATA_DIR}/master.key`)).trim()
      : TEST_MASTER_KEY;
    const newKey = generateMasterKeyText();
    await svc.stop();

    await t.step("another key is refused at start with a clear message", async () => {
      svc.env.MASTER_KEY = generateMasterKeyText();
      await assert.rejects(svc.start(), /Wrong master key/);
    });

    await t.step("rotate-master-key re-wraps every data key; a second run finds none left", async () => {
      svc.env.MASTER_KEY = oldKey;
      const env = { MASTER_KEY: oldKey, NEW_MASTER_KEY: newKey };
      const first = await runTask(svc, "rotate-master-key", [], env);
      assert.equal(first.code, 0, first.stderr);
      assert.match(first.stdout, /1 data keys re-wrapped/);
      const again = await runTask(svc, "rotate-master-key", [], env);
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /0 data keys re-wrapped/);
    });

    await t.step("the old key is refused now; the new one reads, writes and replays", async () => {
      await assert.rejects(svc.start(), /Wrong master key/);
      svc.env.MASTER_KEY = newKey;
      svc.databaseEnv.MASTER_KEY = newKey;
      await svc.start();
      assert.equal((await kv.get("/kv/notes/first")).text, "written before the rotation");
      assert.equal((await kv.post("/kv/notes/second", "after")).status, 200);
      await svc.stop();
      const replay = await runTask(svc, "replay");
      assert.equal(replay.code, 0, replay.stdout + replay.stderr);
    });
  } finally {
    await svc.dispose();
  }
});
