// The pure parts of surviving a database outage: which errors mean "database unavailable", the
// deadline that bounds a wait, and the backoff of the background loops.
import assert from "node:assert/strict";
import { asDatabaseFault, DatabaseUnavailableError, isDatabaseUnavailable } from "../src/db/faults.ts";
import { expireAfter, withDeadline } from "../src/db/deadline.ts";
import { openDatabase, sessionAttrs } from "../src/db/connect.ts";
import { createBackoff, MAX_BACKOFF_MS } from "../src/backoff.ts";
import { startPeriodic } from "../src/periodic.ts";
import { freePort } from "./helpers/service.ts";

const postgresError = (code: string) =>
  Object.assign(new Error(`server said ${code}`), { name: "PostgresError", code });
const coded = (code: string) => Object.assign(new Error(`failed: ${code}`), { code });

/** Runs `work` with console.log and console.error collected instead of printed. */
async function quietly<T>(work: (lines: string[]) => Promise<T> | T): Promise<T> {
  const lines: string[] = [];
  const { log, error } = console;
  console.log = (...args: unknown[]) => lines.push(args.map(String).join(" "));
  console.error = (...args: unknown[]) => lines.push(args.map(String).join(" "));
  try {
    return await work(lines);
  } finally {
    Object.assign(console, { log, error });
  }
}

Deno.test("a refused connection, as the driver reports it, is 'database unavailable'", async () => {
  const db = await openDatabase({
    databaseUrl: `postgres://postgres@127.0.0.1:${freePort()}/none`,
    dataDir: "",
    connectTimeoutMs: 2_000,
  });
  try {
    const error = await db.sql`select 1`.then(() => undefined, (e) => e);
    assert.ok(isDatabaseUnavailable(error), `Classified: ${error?.code} ${error}`);
    const fault = asDatabaseFault(error, "unchanged");
    assert.ok(fault instanceof DatabaseUnavailableError);
    assert.equal(fault.outcome, "unchanged");
    assert.match(fault.message, /^Database unavailable: .*ECONNREFUSED/);
  } finally {
    await db.close();
  }
});

Deno.test("faults of the connection and of a server going away are unavailability; others are not", () => {
  for (
    const code of ["ECONNRESET", "EPIPE", "CONNECTION_CLOSED", "CONNECTION_DESTROYED", "CONNECT_TIMEOUT"]
  ) {
    assert.ok(isDatabaseUnavailable(coded(code)), code);
  }
  for (const state of ["57P01", "57P02", "57P03", "53300", "08006", "08001", "08P01", "25006"]) {
    assert.ok(isDatabaseUnavailable(postgresError(state)), state);
  }
  assert.ok(
    isDatabaseUnavailable(new Error("Batch failed", { cause: coded("ECONNRESET") })),
    "through cause",
  );
  for (
    const error of [
      postgresError("23505"),
      postgresError("40001"),
      new TypeError("x"),
      coded("08006"),
      "text",
    ]
  ) {
    assert.equal(isDatabaseUnavailable(error), false, String(error));
  }
  const unknown = new DatabaseUnavailableError("unknown", "COMMIT unanswered");
  assert.equal(
    asDatabaseFault(unknown, "unchanged"),
    unknown,
    "An error already classified keeps its outcome",
  );
  const bug = new TypeError("bug");
  assert.equal(asDatabaseFault(bug, "unchanged"), bug, "Anything else passes through");
});

Deno.test("a deadline: the work's own answer when in time, else unavailability with the outcome given", async () => {
  assert.equal(await withDeadline(Promise.resolve(7), 1_000, "unchanged"), 7);
  const slow = new Promise((resolve) => setTimeout(resolve, 300, "late"));
  const error = await withDeadline(slow, 50, "unknown").catch((e) => e);
  assert.ok(error instanceof DatabaseUnavailableError);
  assert.equal(error.outcome, "unknown");
  assert.match(error.message, /no answer within 50 ms/);
  await slow;
});

Deno.test("a queued call past its deadline leaves the queue unchanged; a started one's outcome is unknown", async () => {
  const queue: string[] = ["a", "b"];
  const outcomes: unknown[] = [];
  for (const item of ["a", "b"]) {
    const waiting = { resolve: (v: unknown) => outcomes.push(v), reject: (e: unknown) => outcomes.push(e) };
    expireAfter(waiting, 30, () => {
      const at = queue.indexOf(item);
      if (at >= 0) queue.splice(at, 1);
      return at >= 0;
    });
    if (item === "b") queue.splice(queue.indexOf("b"), 1); // "b" was taken into a transaction
  }
  await new Promise((resolve) => setTimeout(resolve, 80));
  assert.deepEqual(queue, []);
  assert.deepEqual(outcomes.map((e) => (e as DatabaseUnavailableError).outcome), ["unchanged", "unknown"]);
});

Deno.test("backoff: bounded doubling while the database is out, logged once per outage", async () => {
  await quietly((lines) => {
    const backoff = createBackoff("test loop");
    assert.equal(backoff.delay(500), 500);
    const waits = [];
    for (let i = 0; i < 6; i++) {
      backoff.failed(coded("ECONNREFUSED"));
      waits.push(backoff.delay(500));
    }
    assert.deepEqual(waits, [500, 1000, 2000, MAX_BACKOFF_MS, MAX_BACKOFF_MS, MAX_BACKOFF_MS]);
    backoff.succeeded();
    assert.equal(backoff.delay(500), 500, "The normal pace returns with the first success");
    backoff.failed(new TypeError("a bug"));
    assert.equal(backoff.delay(500), 500, "Any other failure keeps the pace");
    const said = (text: string) => lines.filter((line) => line.includes(text)).length;
    assert.equal(said("test loop: database unavailable, backing off"), 1);
    assert.equal(said("test loop: database reachable again"), 1);
    assert.equal(said("test loop failed"), 1);
  });
});

Deno.test("a periodic job failed by an outage is tried again soon, not an interval later", async () => {
  await quietly(async (lines) => {
    const runs: number[] = [];
    const start = performance.now();
    const job = startPeriodic("test sweep", () => {
      runs.push(performance.now() - start);
      if (runs.length <= 2) return Promise.reject(coded("ECONNREFUSED"));
      return Promise.resolve();
    }, { intervalMs: 60_000, firstAfterMs: 10 });
    try {
      while (runs.length < 3 && performance.now() - start < 10_000) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await job.stop();
    }
    assert.equal(runs.length, 3, "Two failed runs, then one that succeeds");
    assert.ok(runs[1] - runs[0] >= 900 && runs[2] - runs[1] >= 1_900, `Runs at ${runs.map(Math.round)} ms`);
    assert.ok(runs[2] < 5_000, "Well before the 60 s interval");
    assert.equal(lines.filter((line) => line.includes("test sweep: database unavailable")).length, 1);
  });
});

Deno.test("target_session_attrs=read-write opens only a primary: the driver's hot-standby test", () => {
  assert.deepEqual(
    sessionAttrs("postgres://u@h1:1,h2:2/db?sslmode=disable&target_session_attrs=read-write"),
    { target_session_attrs: "primary" },
  );
  assert.deepEqual(sessionAttrs("postgres://u@h1:1,h2:2/db?target_session_attrs=prefer-standby"), {});
  assert.deepEqual(sessionAttrs("postgres://u@h1:1/db"), {});
});
