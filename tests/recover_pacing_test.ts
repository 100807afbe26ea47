// Recover is paced (issue 21), through real SMTP and a local receiver: a recover that queues
// deliveries makes the webhook's next one wait WEBHOOK_RECOVER_INTERVAL_MS; within it a recover
// gets 429 with Retry-After, is charged 1 like any refusal and sends nothing; one with nothing to
// queue still answers { queued: 0 }; after the wait the failed deliveries are queued again. The
// replay folds the same pace from the log.
import assert from "node:assert/strict";
import { newToken, walletClient } from "./helpers/client.ts";
import { replayOf, startService } from "./helpers/service.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { sendMail } from "./helpers/smtp.ts";
import { eventually } from "./helpers/wait.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test({
  name: "recover: one per webhook per interval, 429 with Retry-After in between",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    // A final answer: each attempt fails at once and the delivery is failed, so recoverable again.
    const endpoint = startReceiver(() => new Response("gone", { status: 410 }));
    const svc = await startService({
      smtp: true,
      env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1", WEBHOOK_RECOVER_INTERVAL_MS: "3000" },
    });
    try {
      const client = walletClient(svc, await newToken(svc));
      const hook = await client.postJson("/webhook", { webhookId: "batch", url: `${endpoint.url}/batch` });
      assert.equal(hook.status, 200, hook.text);
      for (const subject of ["One", "Two"]) {
        assert.equal((await sendMail(svc, { to: hook.json().email, subject, text: "x" })).code, 250);
      }
      const failedAgain = (attempts: number) =>
        eventually(`both failed after ${attempts} attempts`, async () => {
          const list = (await client.get("/webhook/batch/deliveries?status=failed")).json().deliveries;
          return list.length === 2 && list.every((d: any) => d.attempts.length === attempts)
            ? list
            : undefined;
        });
      await failedAgain(1);
      const window = JSON.stringify({ since: new Date(Date.now() - 60_000).toISOString() });

      const first = await client.post("/webhook/batch/recover", window);
      assert.deepEqual([first.status, first.json(), first.cost], [200, { queued: 2 }, 1]);
      await failedAgain(2);
      assert.equal(endpoint.received.length, 4);

      const paced = await client.post("/webhook/batch/recover", window);
      assert.deepEqual([paced.status, paced.cost], [429, 1]);
      const wait = Number(paced.headers.get("retry-after"));
      assert.ok(wait >= 1 && wait <= 3, `Retry-After ${wait}`);
      assert.match(paced.text, /^Too Many Requests: one recover per webhook every 3 s, the next in \d s$/);
      const earlier = JSON.stringify({
        since: new Date(Date.now() - 3600_000).toISOString(),
        until: new Date(Date.now() - 1800_000).toISOString(),
      });
      const nothing = await client.post("/webhook/batch/recover", earlier);
      assert.deepEqual(
        [nothing.status, nothing.json()],
        [200, { queued: 0 }],
        "nothing to queue, nothing to pace",
      );
      await sleep(300);
      assert.equal(endpoint.received.length, 4, "nothing sent again");

      await sleep(wait * 1000);
      const again = await client.post("/webhook/batch/recover", window);
      assert.deepEqual([again.status, again.json()], [200, { queued: 2 }]);
      await failedAgain(3);

      const replay = await replayOf(svc);
      assert.equal(replay.code, 0, replay.stdout + replay.stderr);
      assert.match(replay.stdout, /webhook_health: \d+ rows rebuilt, 0 differences/);
    } finally {
      await endpoint.close();
      await svc.dispose();
    }
  },
});
