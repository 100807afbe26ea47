// The shipped alert rules and scrape configuration pass promtool's checks, and promtool's unit tests
// (src/deploy/prometheus/alerts_test.yml) prove that each rule fires and resolves. A rule test is
// proved able to fail too: the same tests against rules with one threshold moved must fail.
import assert from "node:assert/strict";
import { ensurePrometheus, PROMETHEUS_DIR, promtool } from "./helpers/prometheus.ts";

const RULES = [
  "CreditApiDown",
  "CreditApiDatabaseUnavailable",
  "CreditApiLedgerQueueFull",
  "CreditApiBilledCallsSlow",
  "CreditApiOutboxBehind",
  "CreditApiCronLate",
  "CreditApiSmtpRefusalsHigh",
  "CreditApiEventsGrowth",
];

Deno.test("alert rules: promtool check rules and check config", async () => {
  await ensurePrometheus();
  const rules = await promtool("check", "rules", "alerts.yml");
  assert.ok(rules.success, rules.output);
  assert.match(rules.output, /SUCCESS: 8 rules found/);
  const config = await promtool("check", "config", "prometheus.yml");
  assert.ok(config.success, config.output);
  const text = await Deno.readTextFile(`${PROMETHEUS_DIR}alerts.yml`);
  const tests = await Deno.readTextFile(`${PROMETHEUS_DIR}alerts_test.yml`);
  for (const rule of RULES) {
    assert.match(text, new RegExp(`alert: ${rule}\\n`), rule);
    assert.match(tests, new RegExp(`alertname: ${rule}\\n`), `${rule} has a firing test`);
  }
});

Deno.test("alert rules: promtool test rules proves each fires and resolves, and fails on a moved threshold", async () => {
  await ensurePrometheus();
  const run = await promtool("test", "rules", "alerts_test.yml");
  assert.ok(run.success, run.output);
  assert.match(run.output, /SUCCESS/);

  // The same tests against the ledger rule at 95% instead of 80% must fail on that rule.
  const dir = await Deno.makeTempDir({ prefix: "credit-api-rules-" });
  try {
    const rules = await Deno.readTextFile(`${PROMETHEUS_DIR}alerts.yml`);
    const moved = rules.replace(
      "credit_api_ledger_queue_capacity > 0.8",
      "credit_api_ledger_queue_capacity > 0.95",
    );
    assert.notEqual(moved, rules);
    await Deno.writeTextFile(`${dir}/alerts.yml`, moved);
    await Deno.copyFile(`${PROMETHEUS_DIR}alerts_test.yml`, `${dir}/alerts_test.yml`);
    const failing = await promtool("test", "rules", `${dir}/alerts_test.yml`);
    assert.equal(failing.success, false, failing.output);
    assert.match(failing.output, /alertname: CreditApiLedgerQueueFull/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
