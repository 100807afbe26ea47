// A webhook receiver is outside input too: what it answers is kept in the delivery history, so an
// answer holding U+0000 is kept with U+FFFD in its place instead of failing the attempt's record.
import assert from "node:assert/strict";
import { newToken, walletClient } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";
import { startReceiver } from "./helpers/receiver.ts";

Deno.test("a receiver's answer with U+0000 is recorded, never a fault", async () => {
  const receiver = startReceiver(() => new Response("ok\u0000then more", { status: 200 }));
  const svc = await startService({ env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" } });
  try {
    const client = walletClient(svc, await newToken(svc));
    const created = await client.postJson("/webhook", { webhookId: "nul", url: `${receiver.url}/hook` });
    assert.equal(created.status, 200, created.text);
    const tested = await client.post("/webhook/nul/test");
    assert.deepEqual([tested.status, tested.json().success], [200, true], tested.text);
    const [test] = (await client.get("/webhook/nul/deliveries?limit=1")).json().deliveries;
    assert.equal(test.attempts[0].responseExcerpt, "ok\ufffdthen more");
    assert.doesNotMatch(svc.output(), /request failed/);
  } finally {
    await svc.dispose();
    await receiver.close();
  }
});
