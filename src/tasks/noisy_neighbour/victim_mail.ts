// The victim's mail: one message at a steady rate to its mailbox, each on a session of its own
// from 127.0.0.2, tried again after a temporary refusal as a sending server would; the time to
// `250`, and the time from `250` to its delivery's first byte at the victim's receiver.
import type { MailRecord } from "./report.ts";
import { dataBytes, plainMessage, sendMessage } from "./smtp_client.ts";
import type { ReceivedDelivery } from "./receiver.ts";

export const VICTIM_SMTP_ADDRESS = "127.0.0.2";
/** A temporary refusal (4xx, or no session at all) is tried again after this. */
const RETRY_AFTER_MS = 500;
const SUBJECT = "noisy victim";

export interface VictimMail {
  /** Stops sending new messages; those under way go on. */
  stopSending(): void;
  /**
   * Waits until every message was accepted and delivered, or `waitMs` passed; then stops the
   * retries and gives the records and when the wait ended.
   */
  finish(waitMs: number): Promise<{ records: MailRecord[]; endedAt: number }>;
}

/** Matches deliveries to the victim's messages: the receiver hands each one here. */
export class VictimMailbox {
  readonly #byId = new Map<string, MailRecord>();

  expect(id: string, record: MailRecord) {
    this.#byId.set(id, record);
  }

  /** For the victim's receiver: notes the first delivery of each message. */
  delivered = (delivery: ReceivedDelivery) => {
    const id = new RegExp(`${SUBJECT} ([a-z0-9-]+)`).exec(delivery.body)?.[1];
    const record = id ? this.#byId.get(id) : undefined;
    if (record && record.deliveredAt === null) record.deliveredAt = delivery.firstByteAt;
  };
}

export function startVictimMail(
  options: { smtpPort: number; address: string; mailbox: VictimMailbox; everyMs: number; phase: string },
): VictimMail {
  const records: MailRecord[] = [];
  const sending: Promise<void>[] = [];
  const target = { port: options.smtpPort, localAddress: VICTIM_SMTP_ADDRESS };
  let trying = true;

  // The id travels in the subject and is found again in the delivery: letters, digits and dashes.
  const phase = options.phase.toLowerCase().replace(/[^a-z0-9]+/g, "-");

  async function send(n: number) {
    const id = `${phase}-${n}`;
    const record: MailRecord = {
      startedAt: performance.now(),
      acceptedAt: null,
      refusals: 0,
      deliveredAt: null,
    };
    records.push(record);
    options.mailbox.expect(id, record);
    const from = "sender@victim.example";
    const data = dataBytes(plainMessage({
      from,
      to: options.address,
      subject: `${SUBJECT} ${id}`,
      id: `${id}-${crypto.randomUUID()}`,
      text: `Message ${id} of the victim's steady mail.`,
    }));
    while (trying) {
      const result = await sendMessage(target, { envelope: { from, to: options.address }, data });
      if (result.code === 250) {
        record.acceptedAt = performance.now();
        return;
      }
      // A permanent refusal ends the message; it stays not accepted.
      if (result.code >= 500) return;
      record.refusals++;
      await new Promise((resolve) => setTimeout(resolve, RETRY_AFTER_MS));
    }
  }

  let n = 0;
  sending.push(send(n++));
  const timer = setInterval(() => sending.push(send(n++)), options.everyMs);

  return {
    stopSending: () => clearInterval(timer),
    async finish(waitMs) {
      clearInterval(timer);
      const deadline = performance.now() + waitMs;
      const settled = () => records.every((r) => r.acceptedAt !== null && r.deliveredAt !== null);
      while (!settled() && performance.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      trying = false;
      // A message in the middle of its session finishes it (a reply can take seconds under attack).
      await Promise.all(sending);
      return { records, endedAt: performance.now() };
    },
  };
}
