// Inbound email when things go wrong: the service killed after a 250 and before the delivery
// succeeded, and the hostile corpus of tests/corpus sent over SMTP.
import assert from "node:assert/strict";
import { newToken, walletClient } from "./helpers/client.ts";
import { auditOf, startService } from "./helpers/service.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { sendMail, sendRaw } from "./helpers/smtp.ts";
import { buyCredits, TEST_PAYMENT_SECRET } from "./helpers/credits.ts";
import { ensureGeneratedCorpus, GENERATED_DIR } from "./corpus/generate.ts";
import { eventually } from "./helpers/wait.ts";

type Client = ReturnType<typeof walletClient>;

async function logs(client: Client, type: string, n = 100): Promise<any[]> {
  const answer = await client.get(`/token/logs?type=${type}&n=${n}`);
  assert.equal(answer.status, 200, answer.text);
  return answer.json().logs.reverse();
}

Deno.test("an email answered 250 is delivered after a SIGKILL and a restart", async () => {
  // The real retry schedule: the first retry waits 5 s, time enough to kill and restart.
  const svc = await startService({ smtp: true, env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1" } });
  const receiver = startReceiver(() => new Response("busy", { status: 500 }));
  try {
    const client = walletClient(svc, await newToken(svc));
    const created = await client.postJson("/webhook", { url: `${receiver.url}/r`, webhookId: "r" });
    const address = created.json().email;
    const file = crypto.getRandomValues(new Uint8Array(1000));
    const sent = await sendMail(svc, {
      to: address,
      subject: "Survives",
      text: "Delivered in the end.",
      attachments: [{ filename: "proof.bin", content: file }],
    });
    assert.equal(sent.code, 250, sent.response);
    const [first] = await receiver.waitFor(1);
    // Killed once the failed attempt is recorded, so no lease has to run out after the restart.
    await eventually(
      "the failed attempt recorded",
      async () => (await logs(client, "webhook-delivery")).length || undefined,
    );

    await svc.kill();
    receiver.reply(() => new Response("ok"));
    await svc.start();

    const [, second] = await receiver.waitFor(2, 20_000);
    assert.equal(second.headers["webhook-id"], first.headers["webhook-id"]);
    const payload = JSON.parse(second.body);
    assert.equal(payload.subject, "Survives");
    const download = await fetch(payload.attachments[0].downloadUrl);
    assert.deepEqual(new Uint8Array(await download.arrayBuffer()), file);
    const deliveries = await eventually("both attempts logged", async () => {
      const entries = await logs(client, "webhook-delivery");
      return entries.length === 2 ? entries : undefined;
    });
    assert.deepEqual(deliveries.map((l) => [l.status_code, l.cost]), [[500, 5], [200, 0]]);
    const emails = await logs(client, "email");
    // Charged once, when accepted: 100 - 1 (the webhook) - 5 (with a file). Later reads of the log
    // cost what they return, which the polling above makes vary.
    assert.deepEqual(emails.map((l) => [l.status_code, l.cost, l.balance]), [[250, 5, 94]]);
    const audit = await auditOf(svc);
    assert.equal(audit.code, 0, audit.stdout + audit.stderr);
  } finally {
    await receiver.close();
    await svc.dispose();
  }
});

/** What the corpus messages must get over SMTP, where it is certain; the rest get 250 or 554. */
const EXPECTED: Record<string, number> = {
  "plain.eml": 250,
  "two_attachments.eml": 250,
  "many_headers_5000.eml": 250,
  "nested_50.eml": 250,
  "nested_100.eml": 554,
  "nested_rfc822_100.eml": 554,
  "too_many_headers_12000.eml": 554,
  "huge_header_block.eml": 554,
  "many_parts_2000.eml": 554,
  // 8 MiB of base64 is about 11 MB on the wire.
  "attachment_8mb.eml": 552,
};

Deno.test("the hostile corpus over SMTP: every message answered cleanly, the service stays up", async () => {
  await ensureGeneratedCorpus();
  const svc = await startService({
    smtp: true,
    env: { UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1", PAYMENT_WEBHOOK_SECRET: TEST_PAYMENT_SECRET },
  });
  const receiver = startReceiver();
  try {
    const client = walletClient(svc, await newToken(svc));
    await buyCredits(svc, client.token);
    const created = await client.postJson("/webhook", { url: `${receiver.url}/corpus`, webhookId: "corpus" });
    const address = created.json().email;

    const files: string[] = [];
    for (const dir of [new URL("./corpus/", import.meta.url).pathname, GENERATED_DIR]) {
      for await (const entry of Deno.readDir(dir)) {
        if (entry.isFile && entry.name.endsWith(".eml")) files.push(dir + entry.name);
      }
    }
    assert.ok(files.length >= 30, `only ${files.length} corpus files`);
    const answers: Record<string, number> = {};
    for (const path of files.sort()) {
      const name = path.slice(path.lastIndexOf("/") + 1);
      const sent = await sendRaw(svc, await Deno.readFile(path), [address]);
      answers[name] = sent.code;
      assert.ok([250, 552, 554].includes(sent.code), `${name}: ${sent.response}`);
      if (sent.code === 554) assert.match(sent.response, /^554 5\.6\.0 Message refused: \S/, name);
      const health = await fetch(`${svc.url}/healthz`);
      await health.body?.cancel();
      assert.equal(health.status, 200, `unhealthy after ${name}`);
    }
    for (const [name, code] of Object.entries(EXPECTED)) assert.equal(answers[name], code, name);

    // Every accepted message is delivered; every refused one is logged, free, with its reason.
    const accepted = Object.values(answers).filter((code) => code === 250).length;
    await receiver.waitFor(accepted, 30_000);
    const entries = await logs(client, "email");
    const refused = Object.values(answers).filter((code) => code === 554).length;
    assert.equal(entries.filter((l) => l.status_code === 250).length, accepted);
    const refusals = entries.filter((l) => l.status_code === 554);
    assert.equal(refusals.length, refused);
    assert.ok(refusals.every((l) => l.cost === 0 && /^Message refused: /.test(l.error)));

    const after = await sendMail(svc, { to: address, subject: "Still here", text: "After the corpus." });
    assert.equal(after.code, 250, after.response);
    await receiver.waitFor(accepted + 1);
    const audit = await auditOf(svc);
    assert.equal(audit.code, 0, audit.stdout + audit.stderr);
  } finally {
    await receiver.close();
    await svc.dispose();
  }
});
