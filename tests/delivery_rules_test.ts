// The pure parts of webhooks: the retry schedule, the registry fold and the redacted view.
import assert from "node:assert/strict";
import { MAX_ATTEMPTS, RETRY_DELAYS_MS, verdictAfter } from "../src/webhooks/retry_policy.ts";
import type { PostResult } from "../src/webhooks/http_post.ts";
import { configFromRow, webhooksProjection } from "../projections/webhooks.ts";
import type { NewEvent, StoredEvent } from "../events/catalogue.ts";
import { webhookView } from "../src/webhooks/config/view.ts";

const now = new Date("2026-11-01T10:00:00Z");
const failed = (status: number | undefined, retryable: boolean): PostResult => ({
  ok: false,
  status,
  latencyMs: 5,
  error: status ? `HTTP ${status}` : "connection refused",
  retryable,
});

Deno.test("email deliveries retry after about 5 s, 5 min, 30 min, 2 h, 5 h and 10 h, then give up", () => {
  assert.deepEqual(RETRY_DELAYS_MS.map((ms) => ms / 1000), [5, 300, 1800, 7200, 18000, 36000]);
  assert.equal(MAX_ATTEMPTS, 7);
  for (let attempt = 1; attempt < MAX_ATTEMPTS; attempt++) {
    const verdict = verdictAfter("email", { attempt, result: failed(503, true), now });
    assert.deepEqual(verdict, {
      action: "retry",
      at: new Date(now.getTime() + RETRY_DELAYS_MS[attempt - 1]),
    });
  }
  const last = verdictAfter("email", { attempt: MAX_ATTEMPTS, result: failed(503, true), now });
  assert.deepEqual(last, { action: "abandon", reason: "gave up after 7 attempts: HTTP 503" });
  assert.deepEqual(
    verdictAfter("alert_webhook", { attempt: 1, result: failed(undefined, true), now }).action,
    "retry",
  );
});

Deno.test("success ends a delivery; final answers and scheduled runs are not retried", () => {
  assert.deepEqual(
    verdictAfter("email", { attempt: 3, result: { ok: true, status: 204, latencyMs: 1 }, now }),
    {
      action: "delivered",
    },
  );
  assert.deepEqual(verdictAfter("email", { attempt: 1, result: failed(404, false), now }), {
    action: "abandon",
    reason: "final failure: HTTP 404",
  });
  assert.deepEqual(verdictAfter("scheduled", { attempt: 1, result: failed(503, true), now }), {
    action: "abandon",
    reason: "scheduled run not retried: HTTP 503",
  });
});

Deno.test("the retry scale shortens waits, never below 1 ms", () => {
  const scaled = verdictAfter("email", { attempt: 1, result: failed(500, true), now, scale: 0.001 });
  assert.deepEqual(scaled, { action: "retry", at: new Date(now.getTime() + 5) });
  const tiny = verdictAfter("email", { attempt: 1, result: failed(500, true), now, scale: 0.00000001 });
  assert.deepEqual(tiny, { action: "retry", at: new Date(now.getTime() + 1) });
});

let version = 0;
function stored(event: NewEvent): StoredEvent {
  version++;
  return { ...event, walletId: "w1", version, position: version, recordedAt: now } as StoredEvent;
}

const config = {
  webhookId: "hook",
  url: "https://hooks.example.com/",
  headers: { Authorization: "Bearer x" },
  format: "pagerduty",
  options: { routing_key: "rk", severity: "info" },
  includeAttachments: false,
  email: "r_abc@mail.localhost",
  secret: "whsec_c2VjcmV0",
  createdAt: "2026-11-01T09:00:00.000Z",
};

Deno.test("the registry fold needs no previous row; deletion removes the row", () => {
  const created = stored({ type: "WebhookCreated", data: config } as NewEvent);
  const updated = stored(
    { type: "WebhookUpdated", data: { ...config, url: "https://b.example/" } } as NewEvent,
  );
  const deleted = stored({ type: "WebhookDeleted", data: { webhookId: "hook" } });
  assert.equal(webhooksProjection.keyOf(created), webhooksProjection.keyOf(deleted));
  assert.equal(webhooksProjection.readsPrevious, false);
  const row = webhooksProjection.evolve(undefined, updated)!;
  assert.deepEqual(
    [
      row.url,
      row.format,
      row.include_attachments,
      row.email,
      row.created_at.toISOString(),
      row.schedule_cron,
    ],
    ["https://b.example/", "pagerduty", false, "r_abc@mail.localhost", config.createdAt, null],
  );
  assert.equal(webhooksProjection.evolve(row, deleted), undefined);
  assert.equal(webhooksProjection.keyOf(stored({ type: "WalletOpened", data: {} })), null);
});

Deno.test("the view redacts header values and sensitive options, and shows the secret only when asked", () => {
  const row = configFromRow(
    webhooksProjection.evolve(
      undefined,
      stored({ type: "WebhookCreated", data: config } as NewEvent),
    )!,
  );
  const view = webhookView(row, { hash: "h", now });
  assert.deepEqual(view, {
    webhookId: "hook",
    webhook: "https://hooks.example.com/",
    headers: { Authorization: "***" },
    hash: "h",
    email: "r_abc@mail.localhost",
    format: "pagerduty",
    options: { routing_key: "***", severity: "info" },
    includeAttachments: false,
    active: true,
  });
  assert.equal(webhookView(row, { hash: "h", now, includeSecret: true }).secret, "whsec_c2VjcmV0");
});
