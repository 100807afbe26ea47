// The embedded database as the service opens it: a new data directory is made (in a worker) and
// found again, postgres.js talks to PGlite through the in-process socket whatever way its bytes are
// cut, and a transaction a dropped connection left open is rolled back.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { openDatabase } from "../src/db/connect.ts";
import { openPglite } from "../src/db/embedded_pglite.ts";
import { PgliteSocket } from "../src/db/pglite_socket.ts";

async function withDataDir(fn: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "credit-api-embedded-test-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a new data directory gets a database that keeps what was committed across a reopen", async () => {
  await withDataDir(async (dir) => {
    const first = await openDatabase({ dataDir: dir });
    await first.sql`create table notes (id int8 primary key, body text not null)`;
    await first.sql.begin(async (tx) => {
      await tx`insert into notes values (${1}, ${"kept"})`;
    });
    await first.sql.begin(async (tx) => {
      await tx`insert into notes values (${2}, ${"rolled back"})`;
      throw new Error("Abort on purpose");
    }).catch(() => {});
    await first.close();
    // Only the database is left at the path: no staging directory of the worker's copy.
    const entries = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
    assert.deepEqual(entries, ["embedded.lock", "pglite"]);
    const second = await openDatabase({ dataDir: dir });
    try {
      assert.deepEqual([...await second.sql`select id, body from notes order by id`], [{
        id: 1,
        body: "kept",
      }]);
      const [{ buffers }] = await second.sql`select current_setting('shared_buffers') as buffers`;
      assert.equal(buffers, "16MB");
    } finally {
      await second.close();
    }
  });
});

/** The messages of a simple query ('Q'), as the driver writes them. */
function simpleQuery(text: string): Uint8Array {
  const body = Buffer.from(`${text}\0`);
  const message = Buffer.alloc(5 + body.length);
  message.write("Q", 0);
  message.writeInt32BE(4 + body.length, 1);
  body.copy(message, 5);
  return message;
}

function startupMessage(): Uint8Array {
  const params = Buffer.from("user\0postgres\0database\0postgres\0\0");
  const message = Buffer.alloc(8 + params.length);
  message.writeInt32BE(message.length, 0);
  message.writeInt32BE(196_608, 4);
  params.copy(message, 8);
  return message;
}

/** Everything the socket answers until `until` is among the message types received. */
function answers(socket: PgliteSocket, until: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let received = Buffer.alloc(0);
    const onData = (data: Buffer) => {
      received = Buffer.concat([received, data]);
      const types: string[] = [];
      for (let at = 0; at + 5 <= received.length; at += 1 + received.readInt32BE(at + 1)) {
        types.push(String.fromCharCode(received[at]));
      }
      if (types.includes(until)) {
        socket.off("data", onData);
        resolve(received.toString("latin1"));
      }
    };
    socket.on("data", onData);
    socket.once("error", reject);
  });
}

Deno.test("the in-process socket answers whatever way the driver's bytes are cut, and rolls back on close", async () => {
  await withDataDir(async (dir) => {
    const { createInWorker } = await import("../src/db/embedded_pglite.ts");
    await createInWorker(`${dir}/pglite`);
    const db = await openPglite(`${dir}/pglite`);
    try {
      await db.exec("create table marks (n int)");
      const socket = new PgliteSocket(db);
      // The startup message in two pieces, then a query cut inside its length field.
      const startup = startupMessage();
      let ready = answers(socket, "Z");
      socket.write(startup.subarray(0, 3));
      socket.write(startup.subarray(3));
      assert.match(await ready, /server_version/);
      const query = simpleQuery("begin; insert into marks values (7); select count(*) from marks");
      ready = answers(socket, "Z");
      socket.write(query.subarray(0, 2));
      socket.write(query.subarray(2, 9));
      socket.write(query.subarray(9));
      // The DataRow of the count: one row, inside the transaction.
      assert.ok((await ready).includes("D\0\0\0\x0b\0\x01\0\0\0\x011"), "one DataRow with the count 1");
      assert.equal(db.isInTransaction(), true);
      const closed = new Promise((resolve) => socket.once("close", resolve));
      socket.end();
      await closed;
      assert.equal(db.isInTransaction(), false);
      assert.deepEqual((await db.query("select count(*)::int as n from marks")).rows, [{ n: 0 }]);
    } finally {
      await db.close();
    }
  });
});
