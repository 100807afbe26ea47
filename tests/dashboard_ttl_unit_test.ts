// The key-value view's times to live in human units, both ways.
import assert from "node:assert/strict";
import { MAX_TTL_SECONDS, parseTtl, sizeText, timeLeft } from "../src/http/dashboard/ttl.js";

Deno.test("a time to live is read from human units", () => {
  assert.deepEqual(parseTtl(""), { seconds: 0 });
  assert.deepEqual(parseTtl("90"), { seconds: 90 });
  assert.deepEqual(parseTtl("90s"), { seconds: 90 });
  assert.deepEqual(parseTtl("15m"), { seconds: 900 });
  assert.deepEqual(parseTtl(" 12H "), { seconds: 43200 });
  assert.deepEqual(parseTtl("30d"), { seconds: MAX_TTL_SECONDS });
  for (const bad of ["31d", "0s", "-3", "1w", "12 hours", "1.5h"]) {
    assert.ok("error" in parseTtl(bad), bad);
  }
  assert.equal(
    (parseTtl("31d") as { error: string }).error,
    'Invalid time to live "31d": 1 second to 30 days',
  );
});

Deno.test("an expiry reads as the time left, in its two largest units", () => {
  const now = Date.parse("2027-03-01T12:00:00Z");
  assert.equal(timeLeft("2027-03-08T11:00:00Z", now), "in 6 days 23 hours");
  assert.equal(timeLeft("2027-03-01T12:05:30Z", now), "in 5 minutes");
  assert.equal(timeLeft("2027-03-02T12:00:00Z", now), "in 1 day");
  assert.equal(timeLeft("2027-03-01T12:00:30Z", now), "in less than a minute");
  assert.equal(timeLeft("2027-03-01T11:00:00Z", now), "expired");
  assert.equal(sizeText(12), "12 B");
  assert.equal(sizeText(3500), "3.4 KiB");
});
