// Attack 4, a silent endpoint with recover: a mailbox whose endpoint first refuses (so its mail
// ends `failed`), then accepts connections and never answers, while POST /webhook/{id}/recover
// queues every failed delivery again, over and over. Each attempt can hold a delivery slot for
// the whole delivery timeout.
import { api, createMailbox, json } from "../api.ts";
import { startReceiver } from "../receiver.ts";
import { LOAD } from "../settings.ts";
import { dataBytes, plainMessage, sendMessage } from "../smtp_client.ts";
import { type Attack, clientLoops, httpAnswer, sleep } from "./attack.ts";

const SENDER_ADDRESS = "127.0.0.6";
const WEBHOOK_ID = "silent";
/** Senders of the first mails, and how long their deliveries may take to fail. */
const PREPARE_SENDERS = 8;
const PREPARE_TIMEOUT_MS = 30_000;
/** Between two recover calls of the attack's one client. */
const RECOVER_EVERY_MS = 1_000;

export const silentEndpoint: Attack = async (context) => {
  const { url, attacker } = context;
  const since = new Date(Date.now() - 60_000).toISOString();
  const endpoint = startReceiver("refuse");
  const mailbox = await createMailbox(url, attacker, {
    webhookId: WEBHOOK_ID,
    target: `${endpoint.url}/silent`,
  });
  // The mails whose deliveries the endpoint refuses for good: `failed`, so recover takes them.
  let next = 0;
  let accepted = 0;
  const target = { port: context.smtpPort, localAddress: SENDER_ADDRESS };
  await Promise.all(Array.from({ length: PREPARE_SENDERS }, async () => {
    while (next < LOAD.silentMails) {
      const n = next++;
      const message = plainMessage({
        from: "sender@attacker.example",
        to: mailbox,
        subject: `silent ${n}`,
        id: `silent-${n}-${crypto.randomUUID()}`,
        text: "held",
      });
      const result = await sendMessage(
        target,
        { envelope: { from: "sender@attacker.example", to: mailbox }, data: dataBytes(message) },
      );
      if (result.code === 250) accepted++;
    }
  }));
  const deadline = performance.now() + PREPARE_TIMEOUT_MS;
  while (endpoint.received < accepted && performance.now() < deadline) await sleep(100);
  // Their failures are committed just after the endpoint's answer.
  await sleep(1_000);
  const prepared = endpoint.received;
  endpoint.setMode("silent");

  let queued = 0;
  let recovers = 0;
  const loops = clientLoops(1, async (_client, signal) => {
    const answer = await api(url, {
      method: "POST",
      path: `/webhook/${WEBHOOK_ID}/recover`,
      token: attacker.token,
      from: attacker.from,
      ...json({ since }),
      signal,
    });
    recovers++;
    if (answer.status === 200) queued += Number(JSON.parse(answer.text).queued ?? 0);
    await sleep(RECOVER_EVERY_MS);
    return httpAnswer(answer);
  });
  return {
    async stop() {
      await loops.stop();
      const heldAtEnd = endpoint.held;
      // Nothing of the attack may outlive it: the webhook goes, and its held attempts fail at once.
      const deleted = await api(url, {
        method: "DELETE",
        path: `/webhook/${WEBHOOK_ID}`,
        token: attacker.token,
        from: attacker.from,
      });
      endpoint.setMode("refuse");
      await sleep(200);
      await endpoint.close();
      return {
        tally: loops.tally,
        notes: [
          `${accepted} of ${LOAD.silentMails} mails accepted first, ${prepared} deliveries refused by the endpoint; ` +
          `then ${recovers} recover calls queued ${queued} deliveries again; ${heldAtEnd} connections held ` +
          `unanswered at the end; webhook deleted: ${deleted.status}`,
        ],
      };
    },
  };
};
