// The database family through an outage (a fault proxy between the service and Postgres): the
// outage gauge goes to 1 while the database cannot be reached and back to 0 after, counted once,
// the seconds since the outage start again from its end, a call that ran out of time is counted,
// and /metrics answers all along.
import assert from "node:assert/strict";
import { newToken, walletClient } from "./helpers/client.ts";
import { embedded, freePort, startService } from "./helpers/service.ts";
import { startFaultProxy } from "./helpers/fault_proxy.ts";
import { scrape, valueOf } from "./helpers/metrics.ts";
import { eventually } from "./helpers/wait.ts";

Deno.test({
  name: "metrics database: outage 1 while the database is out, 0 after, counted once; /metrics answers",
  ignore: embedded, // The embedded PGlite runs in the process: there is no connection to cut.
  async fn() {
    const pg = new URL(Deno.env.get("DATABASE_POOLER_URL") ?? Deno.env.get("DATABASE_URL")!);
    const proxy = startFaultProxy({ hostname: pg.hostname, port: Number(pg.port || 5432) });
    const service = await startService({
      routeDatabase: (url) => proxy.urlFor(url),
      env: { METRICS_PORT: String(freePort()), DATABASE_TIMEOUT_MS: "500" },
    });
    try {
      const client = walletClient(service, await newToken(service));
      assert.equal((await client.post("/kv/b/k", "v")).status, 200);
      const before = await scrape(service);
      assert.equal(valueOf(before, "credit_api_db_outage"), 0);
      assert.ok(valueOf(before, "credit_api_db_pool_size") >= 1);

      proxy.refuse();
      proxy.cut();
      // A call while the database is out: 503; the polling loops see the outage within a second.
      assert.equal((await client.post("/kv/b/k", "w")).status, 503);
      const during = await eventually("the outage gauge at 1", async () => {
        const series = await scrape(service);
        return valueOf(series, "credit_api_db_outage") === 1 ? series : undefined;
      });
      assert.equal(valueOf(during, "credit_api_db_seconds_since_outage"), 0);
      assert.ok(during.has('credit_api_outbox_rows{state="due"}'), "the last outbox reading stands");

      // Slow, not out: every chunk delayed past DATABASE_TIMEOUT_MS.
      proxy.accept();
      proxy.setLatency(800);
      await client.post("/kv/b/k", "x");
      proxy.setLatency(0);

      const after = await eventually("the outage over", async () => {
        const series = await scrape(service);
        return valueOf(series, "credit_api_db_outage") === 0 ? series : undefined;
      });
      assert.ok(
        valueOf(after, "credit_api_db_outages_total") - valueOf(before, "credit_api_db_outages_total") >= 1,
      );
      assert.ok(
        valueOf(after, "credit_api_db_timeouts_total") > valueOf(before, "credit_api_db_timeouts_total"),
      );
      assert.ok(
        valueOf(after, "credit_api_db_seconds_since_outage") <
          valueOf(before, "credit_api_db_seconds_since_outage"),
        "counted from the outage's end",
      );
    } finally {
      await service.dispose();
      await proxy.close();
    }
  },
});
