// Given events / when wallet_balance, or a JSON-RPC request / then what it answers, without a
// database: the balance and a key's spend as the batch's lock holds them, never a call; and which
// malformed requests get which short phrase.
import assert from "node:assert/strict";
import { type EventData, type NewEvent, newEvent } from "../events/catalogue.ts";
import { decideBilled, NOW, WALLET } from "./helpers/decider.ts";
import { walletBalanceCommand } from "../src/mcp/wallet_balance.ts";
import { answerRefused, requestRefusal, screenRequests } from "../src/mcp/request_params.ts";
import { TOOL_INPUTS } from "../src/mcp/server.ts";

const opened: NewEvent[] = [
  newEvent("WalletOpened", {}),
  newEvent("CreditsGranted", { amount: 100, balance: 100, reason: "welcome" }),
];
const keyMade = (rules: Partial<EventData<"KeyCreated">> = {}) =>
  newEvent("KeyCreated", { keyId: "key_1", name: "agent", hash: "hash-1", scope: "read", ...rules });
const withKey = { walletId: WALLET, key: { keyId: "key_1", hash: "hash-1" } };

Deno.test("when the token asks its balance, then the balance, no call: nothing charged or logged", () => {
  const when = decideBilled(opened, walletBalanceCommand({ walletId: WALLET }, 0));
  assert.equal(when.decision.log, undefined, "no call");
  assert.deepEqual(when.decision.outcome, { ok: true, answer: { balance: 100, cost: 0 } });
});

Deno.test("when a key asks, then the balance and the key's own spend and cap", () => {
  const when = decideBilled([...opened, keyMade({ spendCap: 40 })], walletBalanceCommand(withKey, 0));
  assert.equal(when.decision.log, undefined);
  assert.deepEqual(when.decision.outcome, {
    ok: true,
    answer: { balance: 100, cost: 0, key: { id: "key_1", scope: "read", spent: 0, spendCap: 40 } },
  });
});

Deno.test("when a revoked, expired or unknown key asks, then its 401 phrase, no call", () => {
  const revoked = decideBilled(
    [...opened, keyMade(), newEvent("KeyRevoked", { keyId: "key_1" })],
    walletBalanceCommand(withKey, 0),
  );
  assert.deepEqual(revoked.decision.outcome, { ok: false, refusal: "Key revoked" });
  const expiresAt = new Date(NOW.getTime() - 1000).toISOString();
  const expired = decideBilled([...opened, keyMade({ expiresAt })], walletBalanceCommand(withKey, 0));
  assert.deepEqual(expired.decision.outcome, { ok: false, refusal: "Key expired" });
  const unknown = decideBilled(opened, walletBalanceCommand(withKey, 0));
  assert.deepEqual(unknown.decision.outcome, { ok: false, refusal: "Key revoked" });
  assert.equal(unknown.decision.log, undefined);
});

const call = (params: unknown, id: string | number = 1) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params,
});

Deno.test("when params are malformed, then -32602 with the field and the rule", () => {
  const phrase = (params: unknown) => requestRefusal(call(params), TOOL_INPUTS);
  assert.deepEqual(phrase({ name: "kv_get", arguments: null }), {
    of: "params",
    phrase: "Invalid params: arguments must be an object, not null",
  });
  assert.equal(phrase({ name: ["kv_get"] })?.phrase, "Invalid params: name must be a string, not an array");
  assert.equal(phrase(7)?.phrase, "Invalid params: params must be an object, not a number");
  assert.match(phrase({ name: "x".repeat(5000) })!.phrase, /^Invalid params: name must be one of kv_get, /);
  assert.ok(phrase({ name: "x".repeat(5000) })!.phrase.length < 200, "the name is never echoed");
  assert.equal(phrase({ name: "constructor" })?.of, "params", "only the tools' own names");
});

Deno.test("when arguments have the wrong type, then a tool error naming the field", () => {
  const refusal = requestRefusal(
    call({ name: "kv_set", arguments: { bucket: "b", key: "k", value: 3 } }),
    TOOL_INPUTS,
  );
  assert.deepEqual(refusal, {
    of: "arguments",
    phrase: "Invalid arguments: value must be a string, not a number",
  });
});

Deno.test("when a request is well formed, or not one this check knows, then the SDK has it", () => {
  for (
    const message of [
      call({ name: "kv_get", arguments: { bucket: "b", key: "k" } }),
      call({ name: "wallet_balance" }),
      call({ name: "wallet_balance", arguments: { extra: 1 } }),
      { jsonrpc: "2.0", id: 1, method: "tools/list" },
      { jsonrpc: "2.0", id: 1, method: "resources/list", params: null },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 1.5, method: "tools/call", params: null },
      "not a request",
    ]
  ) assert.equal(requestRefusal(message, TOOL_INPUTS), undefined, JSON.stringify(message));
});

Deno.test("a refused request becomes a ping for the SDK, and its answer the error", async () => {
  const screened = screenRequests([call(null, "a"), call({ name: "wallet_balance" }, "b")], TOOL_INPUTS);
  assert.deepEqual((screened.body as unknown[])[0], { jsonrpc: "2.0", id: "a", method: "ping" });
  assert.deepEqual([...screened.refused.keys()], ["a"]);
  const sdk = new Response(
    JSON.stringify([{ jsonrpc: "2.0", id: "a", result: {} }, { jsonrpc: "2.0", id: "b" }]),
    {
      headers: { "content-type": "application/json", "content-length": "999" },
    },
  );
  const answer = await answerRefused(sdk, screened.refused);
  assert.equal(answer.headers.get("content-length"), null);
  assert.deepEqual(await answer.json(), [
    {
      jsonrpc: "2.0",
      id: "a",
      error: { code: -32602, message: "Invalid params: params must be an object, not null" },
    },
    { jsonrpc: "2.0", id: "b" },
  ]);
  const untouched = new Response("{}", { status: 406, headers: { "content-type": "application/json" } });
  assert.equal(await answerRefused(untouched, screened.refused), untouched, "an HTTP refusal stays as it is");
});
