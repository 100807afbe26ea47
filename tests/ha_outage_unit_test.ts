// How `deno task ha` counts the seconds without service of a round from the load's answers.
import assert from "node:assert/strict";
import { outage } from "../src/tasks/ha/rounds.ts";
import type { Answer } from "../src/tasks/chaos/load.ts";

const answer = (at: number, status: number, kind: "write" | "read" = "write"): Answer => ({
  kind,
  client: 0,
  key: `k${at}`,
  status,
  phrase: "",
  retryAfter: status === 503,
  at,
  ms: 100,
});

Deno.test("seconds without service: the longest stretch from a failure to the next write served", () => {
  const answers = [
    answer(0, 200),
    answer(1_000, 503), // the fault at 500: a first stretch of 2.1 s
    answer(2_000, 503, "read"),
    answer(3_000, 200),
    answer(4_000, 503), // a second, longer one: 5.1 s
    answer(9_000, 200, "read"), // a read does not end it
    answer(9_000, 200),
    answer(10_000, 200),
  ];
  assert.deepEqual(outage(answers, 500), { secondsWithoutService: 5.1, secondsToWrites: 8.6 });
});

Deno.test("seconds without service: none when nothing failed; to the last answer when never served again", () => {
  assert.deepEqual(outage([answer(0, 200), answer(1_000, 200)], 0), {
    secondsWithoutService: 0,
    secondsToWrites: 0,
  });
  const never = [answer(0, 200), answer(1_000, 503), answer(4_000, 503)];
  assert.deepEqual(outage(never, 500), { secondsWithoutService: 3.1, secondsToWrites: 0 });
});
