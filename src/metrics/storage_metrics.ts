// The size of the permanent log: bytes of `events` (heap, TOAST and indexes), read from the
// catalog at scrape time (cached), for the alert on its growth against the log budget.
import { Gauge } from "prom-client";
import { CachedReading, PREFIX, registry } from "./registry.ts";

const eventsBytes = new CachedReading<number>();

new Gauge({
  name: `${PREFIX}events_bytes`,
  help: "Bytes of the events table (heap, TOAST and indexes), database-wide",
  registers: [registry],
  async collect() {
    const bytes = await eventsBytes.get();
    if (bytes !== undefined) this.set(bytes);
  },
});

/** Where the size of `events` is read from. */
export function watchEventsBytes(read: () => Promise<number>): void {
  eventsBytes.source(read);
}
