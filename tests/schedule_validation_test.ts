// Every schedule rule of CONTRACT section 10 through the API: POST, PUT and PATCH answer 400 with
// a phrase naming the field and the rule, are charged 1 credit, and change nothing; what the
// dialect allows is accepted and planned as the contract says (names, Sunday as 0 and 7, day fields
// joined by OR), with the service's clock set by the test.
import assert from "node:assert/strict";
import { type InProcessService, inProcessService } from "./helpers/in_process.ts";
import { sha256Hex } from "../src/ids.ts";
import { newEvent } from "../events/catalogue.ts";

const URL_A = "https://hooks.example.com/cron";
const FIELDS = "must have 5 fields (minute hour day-of-month month day-of-week)";
const EXTENSIONS = "L, W, #, ? and + are not supported";

/** [cron, timezone, the 400 phrase], one line per rule. */
const REFUSED: [string, string, string][] = [
  ["* * * *", "UTC", `Invalid schedule.cron "* * * *": ${FIELDS}, found 4`],
  ["0 * * * * *", "UTC", `Invalid schedule.cron "0 * * * * *": ${FIELDS}, found 6`],
  ["0 0 * * * * 2027", "UTC", `Invalid schedule.cron "0 0 * * * * 2027": ${FIELDS}, found 7`],
  ["", "UTC", `Invalid schedule.cron "": ${FIELDS}, found 0`],
  ["@daily", "UTC", `Invalid schedule.cron "@daily": @ macros are not supported, use "0 0 * * *"`],
  ["@every 5m", "UTC", `Invalid schedule.cron "@every 5m": @ macros are not supported, write the 5 fields`],
  ["0 0 L * *", "UTC", `Invalid schedule.cron "0 0 L * *": day-of-month "L": ${EXTENSIONS}`],
  ["0 0 15W * *", "UTC", `Invalid schedule.cron "0 0 15W * *": day-of-month "15W": ${EXTENSIONS}`],
  ["0 0 * * 5#3", "UTC", `Invalid schedule.cron "0 0 * * 5#3": day-of-week "5#3": ${EXTENSIONS}`],
  ["0 0 ? * MON", "UTC", `Invalid schedule.cron "0 0 ? * MON": day-of-month "?": ${EXTENSIONS}`],
  ["0 0 * * +MON", "UTC", `Invalid schedule.cron "0 0 * * +MON": day-of-week "+MON": ${EXTENSIONS}`],
  ["60 * * * *", "UTC", `Invalid schedule.cron "60 * * * *": minute must be 0-59`],
  ["0 24 * * *", "UTC", `Invalid schedule.cron "0 24 * * *": hour must be 0-23`],
  ["0 0 32 * *", "UTC", `Invalid schedule.cron "0 0 32 * *": day-of-month must be 1-31`],
  ["0 0 * 0 *", "UTC", `Invalid schedule.cron "0 0 * 0 *": month must be 1-12 or JAN-DEC`],
  ["0 0 * * 8", "UTC", `Invalid schedule.cron "0 0 * * 8": day-of-week must be 0-7 or SUN-SAT`],
  [
    "0 0 * FOO *",
    "UTC",
    `Invalid schedule.cron "0 0 * FOO *": month "FOO" must be numbers, names JAN-DEC, *, lists, ranges or steps`,
  ],
  ["*/0 * * * *", "UTC", `Invalid schedule.cron "*/0 * * * *": minute step must be 1-59`],
  [
    "0 0 * * FRI-MON",
    "UTC",
    `Invalid schedule.cron "0 0 * * FRI-MON": day-of-week range "FRI-MON" must go from low to high (Sunday is 7 at the end of a range)`,
  ],
  ["0 0 30 2 *", "UTC", `Invalid schedule.cron "0 0 30 2 *": never fires`],
  ["0 0 31 4,6,9,11 *", "UTC", `Invalid schedule.cron "0 0 31 4,6,9,11 *": never fires`],
  ["0 9 * * *", "Mars/Olympus", `Invalid schedule.timezone "Mars/Olympus": not an IANA time zone`],
  ["0 9 * * *", "+02:00", `Invalid schedule.timezone "+02:00": not an IANA time zone`],
  ["0 9 * * *", "PST", `Invalid schedule.timezone "PST": not an IANA time zone`],
  ["0 9 * * *", "", `Invalid schedule.timezone "": not an IANA time zone`],
];

async function setup() {
  const svc = await inProcessService();
  const token = await svc.newToken();
  // Three refused calls per rule cost more than the 100 welcome credits.
  await svc.ledger.appendUnbilled({
    walletId: await sha256Hex(token),
    decide: ({ wallet }) => ({
      outcome: undefined,
      events: [newEvent("CreditsGranted", { amount: 1000, balance: wallet!.balance + 1000, reason: "test" })],
    }),
  });
  const send = async (method: string, path: string, body: unknown) => {
    const res = await svc.request(method, path, {
      token,
      body: JSON.stringify(body),
      headers: { "content-type": "application/json" },
    });
    return { ...res, cost: Number(res.headers.get("x-cost")), json: () => JSON.parse(res.text) };
  };
  return { svc, send };
}

function setClock(svc: InProcessService, iso: string) {
  svc.clock.advance(new Date(iso).getTime() - svc.clock.now().getTime());
}

Deno.test({
  name: "schedule validation through the API",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const { svc, send } = await setup();
    try {
      setClock(svc, "2026-06-02T00:00:00.000Z");
      const kept = await send("POST", "/webhook", {
        webhookId: "kept",
        url: URL_A,
        schedule: { cron: "0 9 * * *", timezone: "Europe/Rome" },
      });
      assert.equal(kept.status, 200, kept.text);

      await t.step("POST, PUT and PATCH refuse every rule with its phrase, for 1 credit", async () => {
        for (const [cron, timezone, phrase] of REFUSED) {
          const schedule = { cron, timezone };
          const answers = [
            await send("POST", "/webhook", { webhookId: "new", url: URL_A, schedule }),
            await send("PUT", "/webhook/kept", { url: URL_A, schedule }),
            await send("PATCH", "/webhook/kept", { schedule }),
          ];
          for (const answer of answers) {
            assert.deepEqual(
              [answer.status, answer.text, answer.cost],
              [400, phrase, 1],
              `${cron} ${timezone}`,
            );
            assert.match(answer.headers.get("content-type") ?? "", /^text\/plain/);
          }
        }
        // PATCH merges: one bad field against a valid stored one is refused the same way.
        const bad = await send("PATCH", "/webhook/kept", { schedule: { timezone: "Europe/Atlantis" } });
        assert.deepEqual(
          [bad.status, bad.text],
          [400, `Invalid schedule.timezone "Europe/Atlantis": not an IANA time zone`],
        );
        const never = await send("PATCH", "/webhook/kept", { schedule: { cron: "0 0 30 2 *" } });
        assert.deepEqual([never.status, never.text], [
          400,
          `Invalid schedule.cron "0 0 30 2 *": never fires`,
        ]);
      });

      await t.step("a refused change changes nothing", async () => {
        const view = (await send("GET", "/webhook/kept", undefined)).json();
        assert.deepEqual(
          [view.schedule.cron, view.schedule.timezone, view.schedule.nextRunAt],
          ["0 9 * * *", "Europe/Rome", "2026-06-02T07:00:00.000Z"],
        );
        assert.equal((await send("GET", "/webhook/new", undefined)).status, 404);
      });

      await t.step("the schedule object's own shape: fields, types, no mailbox fields", async () => {
        const cases: [unknown, string][] = [
          [{ cron: "0 9 * * *" }, "Invalid schedule.timezone: required"],
          [{ timezone: "UTC" }, "Invalid schedule.cron: required"],
          [{ cron: 9, timezone: "UTC" }, "Invalid schedule.cron: must be a string"],
          [
            { cron: "0 9 * * *", timezone: "UTC", active: "yes" },
            "Invalid schedule.active: must be true or false",
          ],
          [{ cron: "0 9 * * *", timezone: "UTC", seconds: 0 }, "Unknown field in schedule: seconds"],
        ];
        for (const [schedule, phrase] of cases) {
          const answer = await send("POST", "/webhook", { webhookId: "shape", url: URL_A, schedule });
          assert.deepEqual([answer.status, answer.text], [400, phrase]);
        }
        const mixed = await send("POST", "/webhook", {
          webhookId: "mixed",
          url: URL_A,
          format: "slack",
          schedule: { cron: "0 9 * * *", timezone: "UTC" },
        });
        assert.deepEqual([mixed.status, mixed.text], [400, "Invalid format: not allowed with schedule"]);
      });

      await t.step("the dialect's forms are accepted and planned on the zone's wall clock", async () => {
        // From Tuesday 2026-06-02 00:00 UTC.
        const planned: [string, string, string][] = [
          ["0 12 * * 0", "UTC", "2026-06-07T12:00:00.000Z"], // Sunday as 0
          ["0 12 * * 7", "UTC", "2026-06-07T12:00:00.000Z"], // Sunday as 7
          ["0 12 * * sun", "UTC", "2026-06-07T12:00:00.000Z"], // names, any case
          ["0 9 1 * MON", "UTC", "2026-06-08T09:00:00.000Z"], // both day fields: either matches (Monday first)
          ["0 9 1,15 * FRI", "UTC", "2026-06-05T09:00:00.000Z"], // either matches (Friday first)
          ["30 8 * JUL-AUG/1 *", "UTC", "2026-07-01T08:30:00.000Z"], // month names, range with step
          ["*/20 9-17 * * MON-FRI", "America/New_York", "2026-06-02T13:00:00.000Z"], // steps, ranges, zone
          ["15,45 2 * * *", "Asia/Kolkata", "2026-06-02T20:45:00.000Z"], // lists, half-hour zone
          ["0 0 29 2 *", "UTC", "2028-02-29T00:00:00.000Z"], // rare but fires
        ];
        for (const [index, [cron, timezone, next]] of planned.entries()) {
          const created = await send("POST", "/webhook", {
            webhookId: `ok${index}`,
            url: URL_A,
            schedule: { cron, timezone },
          });
          assert.equal(created.status, 200, `${cron}: ${created.text}`);
          assert.equal(created.json().schedule.nextRunAt, next, cron);
          assert.equal((await send("GET", `/webhook/ok${index}`, undefined)).json().schedule.nextRunAt, next);
        }
      });
    } finally {
      await svc.close();
    }
  },
});
