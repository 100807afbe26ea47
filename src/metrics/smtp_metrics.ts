// SMTP families: sessions admitted, message replies by code (accepted 250, refused 4xx/5xx), the
// parse time of a message, and the parse pool's queue (read at scrape time).
import { Counter, Gauge, Histogram } from "prom-client";
import { metricsOn, PREFIX, registry, Sources } from "./registry.ts";

const sessions = new Counter({
  name: `${PREFIX}smtp_sessions_total`,
  help: "SMTP sessions admitted",
  registers: [registry],
});
const replies = new Counter({
  name: `${PREFIX}smtp_messages_total`,
  help: "Messages answered, by reply code and outcome (accepted, refused)",
  labelNames: ["code", "outcome"],
  registers: [registry],
});
// The usual answers exist from the start at 0; other codes appear when first given.
for (const code of ["250", "451", "550", "552", "554"]) {
  replies.labels(code, code === "250" ? "accepted" : "refused").inc(0);
}
const parseSeconds = new Histogram({
  name: `${PREFIX}smtp_parse_seconds`,
  help: "Time to parse a message in a worker, its wait for a worker excluded",
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});
const parseQueues = new Sources<number>();
new Gauge({
  name: `${PREFIX}smtp_parse_queue_depth`,
  help: "Messages waiting for a parse worker",
  registers: [registry],
  collect() {
    this.set(parseQueues.read().reduce((sum, n) => sum + n, 0));
  },
});

export function recordSmtpSession(): void {
  if (metricsOn()) sessions.inc();
}

/** A message answered with `code` (a 3-digit SMTP reply code: a bounded label). */
export function recordSmtpReply(code: number): void {
  if (!metricsOn()) return;
  const bounded = code >= 200 && code < 600 ? String(Math.trunc(code)) : "other";
  replies.labels(bounded, code < 400 ? "accepted" : "refused").inc();
}

export function recordParse(seconds: number): void {
  if (metricsOn()) parseSeconds.observe(seconds);
}

export function watchParseQueue(read: () => number): () => void {
  return parseQueues.add(read);
}
