// The sensitive fields the catalogue declares: every path names a field of its schema, money is
// never among them, and a sealed event keeps none of them in clear, opens to exactly what it was,
// opens only in its own place, and reads "[erased]" once its wallet's key is gone.
import assert from "node:assert/strict";
import { z } from "zod";
import { EventSchemas, type EventType, SENSITIVE_PATHS, type StoredEvent } from "../events/catalogue.ts";
import { pathSteps } from "../events/sensitivity.ts";
import { MONEY_FIELDS } from "../events/money.ts";
import { ERASED, openEvent, sealEventData } from "../src/secrets/event_sealing.ts";
import { FieldCipher } from "../src/secrets/field_cipher.ts";

/** The schema a path leads to, or undefined when a step names nothing. */
function schemaAt(schema: z.ZodType, steps: string[]): z.ZodType | undefined {
  let at: any = schema;
  for (const step of steps) {
    while (at instanceof z.ZodOptional || at instanceof z.ZodNullable) at = at.unwrap();
    if (step === "*") at = at instanceof z.ZodRecord ? at.def.valueType : undefined;
    else if (step === "[]") at = at instanceof z.ZodArray ? at.def.element : undefined;
    else at = at instanceof z.ZodObject ? at.shape[step] : undefined;
    if (!at) return undefined;
  }
  return at;
}

const newKey = () => new FieldCipher(crypto.getRandomValues(new Uint8Array(32)));

function stored(type: EventType, data: unknown, version = 3): StoredEvent {
  return { type, data, walletId: "w1", version, position: 0, recordedAt: new Date(0) } as StoredEvent;
}

Deno.test("every sensitive path names a field of its event's schema; money is never sensitive", () => {
  const types = Object.keys(SENSITIVE_PATHS) as EventType[];
  assert.ok(
    types.includes("KvWritten") && types.includes("WebhookCreated") && types.includes("EmailReceived"),
  );
  for (const type of types) {
    for (const path of SENSITIVE_PATHS[type]!) {
      assert.ok(schemaAt(EventSchemas[type], pathSteps(path)), `${type}: "${path}" names no field`);
      const first = pathSteps(path)[0];
      assert.ok(!["amount", "balance", "cost", "version"].includes(first), `${type}: "${path}" is money`);
    }
  }
  for (const [type, rule] of Object.entries(MONEY_FIELDS)) {
    assert.ok(!(SENSITIVE_PATHS[type as EventType] ?? []).includes(rule!.field), type);
  }
});

Deno.test("a sealed event holds none of its secrets in clear and opens to what it was", () => {
  const key = newKey();
  const webhook = stored("WebhookCreated", {
    webhookId: "hook",
    url: "https://hooks.example.com/T0K3N",
    headers: { Authorization: "Bearer s3cr3t", "X-Other": "0th3r" },
    template: { body: "tmpl-s3cr3t" },
    options: { routingKey: "r0ut1ng" },
    secret: "whsec_c2VjcmV0",
    createdAt: new Date(0).toISOString(),
  });
  const call = stored("CallBilled", {
    callId: "c1",
    method: "POST",
    path: "/kv/privatebucket/privatekey",
    endpoint: "kv",
    status: 200,
    cost: 1,
    balance: 99,
    ms: 3,
  });
  const mail = stored("EmailReceived", {
    deliveryId: "d",
    webhookId: "hook",
    recipient: "box@mail.example",
    messageId: "<m@x>",
    from: "alice@example.com",
    subject: "Quarterly s4l4ry",
    size: 10,
    attachments: [{ filename: "p4yslip.pdf", contentType: "application/pdf", size: 3 }],
    truncated: false,
  });
  for (const event of [webhook, call, mail]) {
    const data = sealEventData(event, key);
    const text = JSON.stringify(data);
    for (
      const secret of [
        "s3cr3t",
        "0th3r",
        "T0K3N",
        "r0ut1ng",
        "whsec_",
        "privatebucket",
        "alice",
        "s4l4ry",
        "p4yslip",
      ]
    ) {
      assert.ok(!text.includes(secret), `${event.type} keeps "${secret}" in clear: ${text}`);
    }
    const opened = openEvent({ ...event, data } as StoredEvent, key);
    assert.deepEqual(opened.data, event.data);
  }
  const sealedCall = sealEventData(call, key) as Record<string, unknown>;
  assert.deepEqual(
    [sealedCall.cost, sealedCall.balance, sealedCall.endpoint],
    [1, 99, "kv"],
    "money in clear",
  );
  // Moved to another version of the stream, the message does not open.
  assert.throws(() => openEvent({ ...call, version: 4, data: sealedCall } as StoredEvent, key));
  assert.throws(() => openEvent({ ...call, data: sealedCall } as StoredEvent, newKey()));
});

Deno.test("without its wallet's key a sealed event reads [erased]; one without secrets is unchanged", () => {
  const key = newKey();
  const kv = stored("KvWritten", {
    bucket: "b",
    key: "k",
    value: "v4lue",
    expiresAt: new Date(0).toISOString(),
  });
  const data = sealEventData(kv, key);
  const erased = openEvent({ ...kv, data } as StoredEvent, null);
  assert.deepEqual(erased.data, {
    bucket: ERASED,
    key: ERASED,
    value: ERASED,
    expiresAt: new Date(0).toISOString(),
  });
  assert.deepEqual(sealEventData(kv, null), erased.data, "sealed after the erasure: erased at once");
  const granted = stored("CreditsGranted", { amount: 100, balance: 100, reason: "welcome" });
  assert.equal(sealEventData(granted, key), granted.data);
});
