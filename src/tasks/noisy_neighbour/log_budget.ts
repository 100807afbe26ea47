// The permanent-log budget, measured: the most bytes of `events` one wallet adds per credit spent
// (the largest paid calls the service allows) and, for the free and refused calls, the bytes per
// call times what the code's rate limits allow a day. Runs against any service with TRUST_PROXY
// (its wallets come from their own client addresses); `deno task bench` can call it too.
import type { Sql } from "../../db/connect.ts";
import { VIEW_CALLS_PER_MINUTE } from "../../wallets/view_limit.ts";
import { MAX_HEADERS, MAX_OPTION_CHARS, MAX_OPTIONS, MAX_WEBHOOK_URL_LENGTH } from "../../webhooks/mod.ts";
import { api, createMailbox, json, newWallet, randomText, spendAll } from "./api.ts";
import { eventsMark, rowBytesSince, walletIdOf } from "./log_bytes.ts";
import {
  budgetFigures,
  type BudgetProbe,
  type FreeGroup,
  type FreeProbe,
  type LogBudget,
} from "./budget_figures.ts";
import { startReceiver } from "./receiver.ts";
import { dataBytes, sendMessage } from "./smtp_client.ts";

export interface BudgetOptions {
  url: string;
  /** The service's database, to read the rows each probe added. */
  sql: Sql;
  /** The SMTP port, for the email probe (skipped without it or without private webhooks). */
  smtpPort?: number;
  /** The service allows http://127.0.0.1 webhooks (UNSAFE_ALLOW_PRIVATE_WEBHOOKS). */
  allowPrivateWebhooks?: boolean;
  /** Distinct client addresses for the probe's wallets (X-Forwarded-For); default 10.250.x.y. */
  clientAddress?: (n: number) => string;
}

/** Longest query strings tried, longest first: a request line must fit the server's header limit. */
const QUERY_LENGTHS = [16_000, 15_000, 12_000, 8_000, 4_000, 2_000, 1_000];
const ATTACHMENTS = 100;
/** Mirrors of input.ts's unexported bounds of header names and values. */
const HEADER_NAME_CHARS = 256;
const HEADER_VALUE_CHARS = 4096;
const TEMPLATE_BYTES = 2000;

function defaultAddress(n: number): string {
  return `10.250.${(Deno.pid + n) % 250}.${(n % 250) + 1}`;
}

export async function measureLogBudget(options: BudgetOptions): Promise<LogBudget> {
  const { url, sql } = options;
  const address = options.clientAddress ?? defaultAddress;
  const payer = { token: await newWallet(url, address(1)), from: address(1) };
  const payerId = walletIdOf(payer.token);

  /** One call of the payer's (or another wallet's), and the bytes its wallet's rows grew by. */
  async function measure(
    name: string,
    call: () => Promise<{ status: number | string; cost: number | null }>,
    walletId = payerId,
    settle?: () => Promise<void>,
  ): Promise<BudgetProbe> {
    const mark = await eventsMark(sql);
    const answer = await call();
    await settle?.();
    return {
      name,
      status: answer.status,
      credits: answer.cost ?? 0,
      bytes: await rowBytesSince(sql, mark, [walletId]),
    };
  }

  // The longest query the service takes: every free or refused call below carries one.
  let queryChars = 0;
  for (const length of QUERY_LENGTHS) {
    const answer = await api(url, {
      method: "GET",
      path: `/recharge?amount=1&pad=${randomText(length)}`,
      ...payer,
    });
    if (answer.status !== 414 && answer.status !== 431) {
      queryChars = length;
      break;
    }
  }
  const pad = () => `pad=${randomText(queryChars)}`;
  const get = (path: string, who: { token: string; from: string }) => () =>
    api(url, { method: "GET", path, ...who });

  const paid: BudgetProbe[] = [];
  paid.push(
    await measure(
      "KV write of 1000 four-byte characters",
      () =>
        api(url, {
          method: "POST",
          path: `/kv/${randomText(30)}/${randomText(30)}?ttl=2592000`,
          ...payer,
          body: Array.from(
            { length: 1000 },
            () => String.fromCodePoint(0x20000 + Math.floor(Math.random() * 0xa6d0)),
          )
            .join(""),
        }),
    ),
  );
  paid.push(await measure("GET /kv with the longest query (404)", get(`/kv/b/missing?${pad()}`, payer)));
  paid.push(
    await measure(
      "webhook create at every bound",
      () => api(url, { method: "POST", path: "/webhook", ...payer, ...json(largestWebhook()) }),
    ),
  );
  const email = await emailProbe(options, payer, measure);
  if (email) paid.push(email);

  const zero = { token: await newWallet(url, address(2)), from: address(2) };
  await spendAll(url, zero);
  const free: FreeProbe[] = [];
  const freeProbe = async (group: FreeGroup, probe: Promise<BudgetProbe>) =>
    free.push({ ...(await probe), group });
  await freeProbe(
    "other",
    measure("GET /recharge with the longest query", get(`/recharge?amount=1&${pad()}`, payer)),
  );
  await freeProbe(
    "other",
    measure("402 of a wallet at 0, longest query", get(`/kv/b/k?${pad()}`, zero), walletIdOf(zero.token)),
  );
  await freeProbe(
    "views",
    measure("GET /token/ledger with the longest query", get(`/token/ledger?limit=1&${pad()}`, payer)),
  );
  // Past the views' limit: a 429, free.
  for (let i = 1; i < VIEW_CALLS_PER_MINUTE; i++) {
    await api(url, { method: "GET", path: "/token/ledger?limit=1", ...payer });
  }
  await freeProbe(
    "other",
    measure("429 past the views' limit, longest query", get(`/token/ledger?limit=1&${pad()}`, payer)),
  );
  await freeProbe("other", measure("MCP wallet_balance", () => mcpWalletBalance(url, payer)));
  return { queryChars, paid, free, ...budgetFigures(paid, free) };
}

/** A webhook at every bound the create allows: headers, options, template and URL. */
function largestWebhook() {
  const headers = Object.fromEntries(
    Array.from(
      { length: MAX_HEADERS },
      () => [randomText(HEADER_NAME_CHARS), randomText(HEADER_VALUE_CHARS)],
    ),
  );
  const options = Object.fromEntries(
    Array.from({ length: MAX_OPTIONS }, () => [randomText(64), randomText(MAX_OPTION_CHARS)]),
  );
  const template = { text: randomText(TEMPLATE_BYTES - 20) };
  const base = "https://hooks.example.com/";
  return {
    webhookId: randomText(30),
    url: base + randomText(MAX_WEBHOOK_URL_LENGTH - base.length),
    headers,
    format: "custom",
    template,
    options,
  };
}

/** An email with many attachments of long names, its delivery included (5 credits). */
async function emailProbe(
  options: BudgetOptions,
  payer: { token: string; from: string },
  measure: (
    name: string,
    call: () => Promise<{ status: number | string; cost: number | null }>,
    walletId?: string,
    settle?: () => Promise<void>,
  ) => Promise<BudgetProbe>,
): Promise<BudgetProbe | undefined> {
  if (!options.smtpPort || !options.allowPrivateWebhooks) return undefined;
  const receiver = startReceiver("ok");
  try {
    const mailbox = await createMailbox(options.url, payer, {
      webhookId: "budget",
      target: `${receiver.url}/budget`,
    });
    const boundary = `b${randomText(20)}`;
    const parts = Array.from({ length: ATTACHMENTS }, () =>
      [
        `--${boundary}`,
        `Content-Type: application/octet-stream`,
        `Content-Disposition: attachment; filename="${randomText(200)}.bin"`,
        "Content-Transfer-Encoding: base64",
        "",
        btoa(randomText(48)),
      ].join("\r\n"));
    const message = [
      `From: "${randomText(200)}" <sender@budget.example>`,
      `To: ${mailbox}`,
      `Subject: ${randomText(900)}`,
      `Message-ID: <${randomText(200)}@budget.example>`,
      "MIME-Version: 1.0",
      `Content-Type: multipart/mixed; boundary="${boundary}"`,
      "",
      `--${boundary}`,
      "Content-Type: text/plain",
      "",
      randomText(500),
      ...parts,
      `--${boundary}--`,
      "",
    ].join("\r\n");
    return await measure(
      `email with ${ATTACHMENTS} attachments of long names, delivered once`,
      async () => {
        // SMTP tells no cost: the wallet's balance does.
        const before = await balanceOf(options.sql, payer.token);
        const result = await sendMessage(
          { port: options.smtpPort!, localAddress: "127.0.0.1" },
          { envelope: { from: "sender@budget.example", to: mailbox }, data: dataBytes(message) },
        );
        return { status: `smtp ${result.code}`, cost: before - await balanceOf(options.sql, payer.token) };
      },
      undefined,
      async () => {
        const deadline = performance.now() + 10_000;
        while (receiver.received === 0 && performance.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        // The attempt's own event is committed just after the answer.
        await new Promise((resolve) => setTimeout(resolve, 500));
      },
    );
  } finally {
    await receiver.close();
  }
}

/** The balance as the wallets projection holds it: read without a call, so nothing is logged. */
async function balanceOf(sql: Sql, token: string): Promise<number> {
  const [row] = await sql<{ balance: number }[]>`select balance from wallets where wallet_id = ${
    walletIdOf(token)
  }`;
  return Number(row?.balance ?? 0);
}

async function mcpWalletBalance(url: string, wallet: { token: string; from: string }) {
  const answer = await api(url, {
    method: "POST",
    path: "/mcp",
    ...wallet,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "wallet_balance", arguments: {} },
    }),
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
  });
  return { status: answer.status, cost: 0 };
}
