// The deliveries a user can see and fix (issue 13), through real SMTP and a local receiver: a
// delivery that fails, is retried, is listed with each attempt's status and answer, is abandoned,
// then is sent again by hand and delivered with a signature that verifies; a network error; pages,
// filters and the refusals; a test send in the history; recover over a window; nothing charged
// twice, a clean audit and a clean replay.
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { newToken, walletClient } from "./helpers/client.ts";
import { auditOf, freePort, replayOf, startService } from "./helpers/service.ts";
import { type Receiver, startReceiver } from "./helpers/receiver.ts";
import { sendMail, type SmtpTarget } from "./helpers/smtp.ts";
import { buyCredits, TEST_PAYMENT_SECRET } from "./helpers/credits.ts";
import { eventually } from "./helpers/wait.ts";

type Client = ReturnType<typeof walletClient>;

async function accepted(svc: SmtpTarget, to: string, subject: string) {
  const sent = await sendMail(svc, {
    from: "Ann <ann@sender.example>",
    to,
    subject,
    text: `Body of ${subject}`,
  });
  assert.equal(sent.code, 250, `mail "${subject}" to ${to}`);
}

/** The webhook's deliveries once `ready` says they have settled. */
async function deliveriesWhen(client: Client, path: string, ready: (list: any[]) => boolean, what: string) {
  return await eventually(what, async () => {
    const page = await client.get(path);
    assert.equal(page.status, 200, page.text);
    const list = page.json().deliveries;
    return ready(list) ? list : undefined;
  }, 30_000);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test("deliveries: history, retry by hand, recover", async (t) => {
  // The retry waits shrink from 5 s ... 10 h to 0.1 ms ... 0.72 s: seven attempts take about 1.3 s.
  const svc = await startService({
    smtp: true,
    env: {
      UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1",
      DELIVERY_RETRY_SCALE: "0.00002",
      PAYMENT_WEBHOOK_SECRET: TEST_PAYMENT_SECRET,
    },
  });
  const receivers: Receiver[] = [];
  const receive = (reply: Parameters<typeof startReceiver>[0]) => {
    const receiver = startReceiver(reply);
    receivers.push(receiver);
    return receiver;
  };
  try {
    const client = walletClient(svc, await newToken(svc));
    await buyCredits(svc, client.token);
    const create = async (webhookId: string, url: string) => {
      const created = await client.postJson("/webhook", { url, webhookId });
      assert.equal(created.status, 200, created.text);
      return created.json();
    };

    // Seven answers of 500, the first with a body far over the 1 KiB kept.
    const flaky = receive((_, i) =>
      new Response(i === 0 ? "x".repeat(3000) : `{"error":"down #${i + 1}"}`, { status: 500 })
    );
    const hook = await create("flaky", `${flaky.url}/flaky`);
    await accepted(svc, hook.email, "Invoice");

    let deliveryId = "";
    await t.step("a failing delivery is retried, listed with each attempt, then abandoned", async () => {
      const [list] = [
        await deliveriesWhen(
          client,
          "/webhook/flaky/deliveries",
          (l) => l[0]?.status === "abandoned",
          "the delivery abandoned",
        ),
      ];
      assert.equal(flaky.received.length, 7);
      assert.equal(list.length, 1);
      const [delivery] = list;
      deliveryId = delivery.deliveryId;
      assert.equal(deliveryId, flaky.received[0].headers["webhook-id"], "the webhook-id header");
      assert.deepEqual(Object.keys(delivery).sort(), [
        "attempts",
        "createdAt",
        "deliveryId",
        "kind",
        "nextAttemptAt",
        "status",
      ]);
      assert.deepEqual([delivery.kind, delivery.nextAttemptAt], ["email", null]);
      assert.equal(delivery.attempts.length, 7);
      assert.ok(
        delivery.attempts.every((a: any) =>
          a.statusCode === 500 && a.error === "HTTP 500 Internal Server Error"
        ),
      );
      assert.equal(delivery.attempts[0].responseExcerpt, "x".repeat(1024), "at most 1 KiB of the answer");
      assert.deepEqual(
        delivery.attempts.slice(1).map((a: any) => a.responseExcerpt),
        [2, 3, 4, 5, 6, 7].map((n) => `{"error":"down #${n}"}`),
      );
      const times = delivery.attempts.map((a: any) => Date.parse(a.at));
      assert.deepEqual([...times].sort((a, b) => a - b), times, "oldest attempt first");
    });

    await t.step("one delivery shows the body as it was last sent", async () => {
      const one = await client.get(`/webhook/flaky/deliveries/${deliveryId}`);
      assert.deepEqual([one.status, one.cost], [200, 1]);
      assert.deepEqual(one.json().payload, JSON.parse(flaky.received[6].body));
      assert.equal(one.json().payload.subject, "Invoice");
    });

    await t.step(
      "sent again by hand: same webhook-id, fresh signature, delivered, not charged again",
      async () => {
        flaky.reply(() => new Response("thanks"));
        // webhook-timestamp counts seconds: a second later, a fresh one shows.
        await sleep(1100);
        const before = (await client.get("/token")).balance!;
        const retried = await client.post(`/webhook/flaky/deliveries/${deliveryId}/retry`);
        assert.deepEqual(
          [retried.status, retried.cost, retried.balance],
          [200, 1, before - 1],
          "the call alone",
        );
        assert.equal(retried.json().status, "pending");
        assert.ok(Date.parse(retried.json().nextAttemptAt) > 0);
        const [, , , , , , , again] = await flaky.waitFor(8);
        assert.equal(again.headers["webhook-id"], deliveryId);
        const last = flaky.received[6].headers;
        assert.ok(Number(again.headers["webhook-timestamp"]) > Number(last["webhook-timestamp"]));
        assert.notEqual(again.headers["webhook-signature"], last["webhook-signature"]);
        const body = new Webhook(hook.secret).verify(again.body, again.headers) as any;
        assert.equal(body.subject, "Invoice");
        const [delivered] = await deliveriesWhen(
          client,
          "/webhook/flaky/deliveries",
          (l) => l[0]?.status === "delivered",
          "the retry delivered",
        );
        assert.equal(delivered.attempts.length, 8);
        const newest = delivered.attempts[7];
        assert.deepEqual([newest.statusCode, newest.error, newest.responseExcerpt], [200, null, "thanks"]);
        const logs = (await client.get("/token/logs?type=webhook-delivery&n=20")).json().logs;
        const attempts = logs.filter((l: any) => l.path === "flaky");
        assert.deepEqual(
          attempts.map((l: any) => l.cost),
          [0, 0, 0, 0, 0, 0, 0, 2],
          "newest first: charged once",
        );
      },
    );

    await t.step("an answer that never came: statusCode null, the error says why", async () => {
      const dead = await create("dead", `http://127.0.0.1:${freePort()}/gone`);
      await accepted(svc, dead.email, "Nobody home");
      const [delivery] = await deliveriesWhen(
        client,
        "/webhook/dead/deliveries",
        (l) => (l[0]?.attempts.length ?? 0) >= 1,
        "the first attempt",
      );
      const first = delivery.attempts[0];
      assert.deepEqual([first.statusCode, first.error, first.responseExcerpt], [
        null,
        "connection refused",
        null,
      ]);
      assert.equal((await client.delete("/webhook/dead")).status, 200);
    });

    // Three mails the receiver refuses for good (404), sent a little apart.
    const batch = receive(() => new Response("no such hook", { status: 404 }));
    const batchHook = await create("batch", `${batch.url}/batch`);
    const sentAt: number[] = [];
    for (const subject of ["First", "Second", "Third"]) {
      sentAt.push(Date.now());
      await accepted(svc, batchHook.email, subject);
      await batch.waitFor(sentAt.length);
      await sleep(20);
    }

    await t.step("pages newest first, a status filter, and a cursor", async () => {
      const failed = await deliveriesWhen(
        client,
        "/webhook/batch/deliveries?status=failed",
        (l) => l.length === 3,
        "three failed deliveries",
      );
      assert.ok(failed.every((d: any) => d.attempts.length === 1 && d.attempts[0].statusCode === 404));
      const first = await client.get("/webhook/batch/deliveries?limit=2");
      assert.deepEqual([first.status, first.cost, first.json().deliveries.length], [200, 1, 2]);
      assert.equal(typeof first.json().nextCursor, "string");
      const second = await client.get(`/webhook/batch/deliveries?limit=2&cursor=${first.json().nextCursor}`);
      assert.deepEqual([second.json().deliveries.length, second.json().nextCursor], [1, null]);
      const ids = [...first.json().deliveries, ...second.json().deliveries].map((d: any) => d.deliveryId);
      assert.deepEqual(ids, failed.map((d: any) => d.deliveryId), "the same order across pages");
      const created = failed.map((d: any) => Date.parse(d.createdAt));
      assert.deepEqual([...created].sort((a, b) => b - a), created, "newest first");
      assert.deepEqual(
        (await client.get("/webhook/batch/deliveries?status=delivered")).json().deliveries,
        [],
      );
    });

    await t.step("bad requests are 400, unknown ones 404, each charged 1 and changing nothing", async () => {
      const recover = (body: unknown, webhookId = "batch") =>
        client.post(`/webhook/${webhookId}/recover`, typeof body === "string" ? body : JSON.stringify(body));
      const recent = new Date(Date.now() - 1000);
      const cases: [Promise<any>, number, RegExp][] = [
        [
          client.get("/webhook/batch/deliveries?limit=0"),
          400,
          /^Invalid limit: must be an integer from 1 to 100$/,
        ],
        [client.get("/webhook/batch/deliveries?limit=101"), 400, /^Invalid limit: /],
        [
          client.get("/webhook/batch/deliveries?status=lost"),
          400,
          /^Invalid status: must be one of pending, /,
        ],
        [
          client.get("/webhook/batch/deliveries?cursor=zzz"),
          400,
          /^Invalid cursor "zzz": must be a nextCursor/,
        ],
        [client.get("/webhook/nope/deliveries"), 404, /^Webhook not found$/],
        [client.get("/webhook/batch/deliveries/msg_nope"), 404, /^Delivery not found$/],
        [client.get("/webhook/batch/deliveries/bad.id"), 400, /^Invalid deliveryId: /],
        [client.post("/webhook/batch/deliveries/msg_nope/retry"), 404, /^Delivery not found$/],
        [recover("{}"), 400, /^Invalid since: /],
        [recover({ since: "yesterday" }), 400, /^Invalid since: must be a date-time/],
        [recover({ since: new Date(Date.now() - 8 * 86400_000) }), 400, /must be at most 7 days ago$/],
        [recover({ since: recent, until: new Date(Date.now() - 5000) }), 400, /must be after since$/],
        [recover({ since: recent, x: 1 }), 400, /^Unknown field: x$/],
        [recover({ since: recent }, "nope"), 404, /^Webhook not found$/],
      ];
      for (const [answer, status, phrase] of cases) {
        const res = await answer;
        assert.equal(res.status, status, res.text);
        assert.match(res.text, phrase);
        assert.equal(res.cost, 1);
      }
      assert.equal(batch.received.length, 3, "nothing sent again");
    });

    await t.step("recover sends again the failed deliveries of the window, and only those", async () => {
      batch.reply(() => new Response("ok"));
      const window = {
        since: new Date(sentAt[1] - 5).toISOString(),
        until: new Date(Date.now() + 1000).toISOString(),
      };
      const recovered = await client.post("/webhook/batch/recover", JSON.stringify(window));
      assert.deepEqual([recovered.status, recovered.json(), recovered.cost], [200, { queued: 2 }, 1]);
      await batch.waitFor(5);
      const list = await deliveriesWhen(
        client,
        "/webhook/batch/deliveries",
        (l) => l.filter((d: any) => d.status === "delivered").length === 2,
        "two recovered",
      );
      const bySubject = new Map(
        batch.received.map((r) => [JSON.parse(r.body).subject, r.headers["webhook-id"]]),
      );
      const statusOf = (subject: string) =>
        list.find((d: any) => d.deliveryId === bySubject.get(subject)).status;
      assert.deepEqual(["First", "Second", "Third"].map(statusOf), ["failed", "delivered", "delivered"]);
      const again = await client.post("/webhook/batch/recover", JSON.stringify(window));
      assert.deepEqual(again.json(), { queued: 0 }, "delivered ones are not sent again");
    });

    await t.step("a test send is in the history with its body; it is not sent again", async () => {
      const tested = await client.post("/webhook/batch/test");
      assert.equal(tested.json().success, true);
      const [test] = (await client.get("/webhook/batch/deliveries?limit=1")).json().deliveries;
      assert.equal(test.kind, "test");
      assert.equal(test.status, "delivered");
      assert.match(test.deliveryId, /^test_/);
      assert.equal(test.attempts[0].responseExcerpt, "ok");
      const one = (await client.get(`/webhook/batch/deliveries/${test.deliveryId}`)).json();
      assert.deepEqual(one.payload, JSON.parse(batch.received.at(-1)!.body));
      const retried = await client.post(`/webhook/batch/deliveries/${test.deliveryId}/retry`);
      assert.deepEqual([retried.status, retried.cost], [409, 1]);
      assert.match(retried.text, /is a test: send a new one with POST \/webhook\/batch\/test$/);
    });

    await t.step("every email charged once; the audit and the replay are clean", async () => {
      const emails = (await client.get("/token/logs?type=email&n=20")).json().logs;
      assert.deepEqual(emails.map((l: any) => l.cost), [2, 2, 2, 2, 2]);
      const audit = await auditOf(svc);
      assert.equal(audit.code, 0, audit.stdout + audit.stderr);
      const replay = await replayOf(svc);
      assert.equal(replay.code, 0, replay.stdout + replay.stderr);
      assert.match(replay.stdout, /delivery_history: \d+ rows rebuilt, 0 differences/);
      assert.match(replay.stdout, /webhook_health: \d+ rows rebuilt, 0 differences/);
    });
  } finally {
    for (const receiver of receivers) await receiver.close();
    await svc.dispose();
  }
});
