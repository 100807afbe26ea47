// The webhook registry read model: each webhook's current configuration, its signing secret and its
// mailbox address. Every webhook event carries the whole configuration, so the fold is one step.
import type { Queryable } from "../src/db/connect.ts";
import type { EventData, StoredEvent } from "../events/catalogue.ts";
import { type Projection, type ReadKind, rowRead } from "./projection.ts";

export interface WebhookRow {
  wallet_id: string;
  webhook_id: string;
  url: string;
  headers: Record<string, string>;
  format: string | null;
  template: Record<string, unknown> | null;
  options: Record<string, string>;
  include_attachments: boolean;
  schedule_cron: string | null;
  schedule_timezone: string | null;
  schedule_active: boolean | null;
  email: string | null;
  secret: string;
  created_at: Date;
}

export type WebhookConfigData = EventData<"WebhookCreated">;

/** The row a configuration event leaves; pure. */
export function webhookRowOf(walletId: string, config: WebhookConfigData): WebhookRow {
  return {
    wallet_id: walletId,
    webhook_id: config.webhookId,
    url: config.url,
    headers: config.headers,
    format: config.format || null,
    template: config.template ?? null,
    options: config.options ?? {},
    include_attachments: config.includeAttachments ?? true,
    schedule_cron: config.schedule?.cron ?? null,
    schedule_timezone: config.schedule?.timezone ?? null,
    schedule_active: config.schedule?.active ?? null,
    email: config.email ?? null,
    secret: config.secret,
    created_at: new Date(config.createdAt),
  };
}

const COLUMNS = [
  "wallet_id",
  "webhook_id",
  "url",
  "headers",
  "format",
  "template",
  "options",
  "include_attachments",
  "schedule_cron",
  "schedule_timezone",
  "schedule_active",
  "email",
  "secret",
  "created_at",
] as const;

function isWebhookEvent(event: StoredEvent): boolean {
  return event.type === "WebhookCreated" || event.type === "WebhookUpdated" ||
    event.type === "WebhookDeleted";
}

export const webhooksProjection: Projection<WebhookRow> = {
  table: "webhooks",
  columns: COLUMNS,
  keyColumns: ["wallet_id", "webhook_id"],
  keyOf(event) {
    if (!isWebhookEvent(event)) return null;
    return JSON.stringify([event.walletId, (event.data as { webhookId: string }).webhookId]);
  },
  evolve(_row, event) {
    if (event.type === "WebhookCreated" || event.type === "WebhookUpdated") {
      return webhookRowOf(event.walletId, event.data);
    }
    return undefined;
  },
  readsPrevious: false,
  async save(tx, event, row) {
    if (row) {
      // tx.json: postgres.js serializes the value once; a JSON string cast to jsonb would be stored as a string.
      const headers = tx.json(row.headers);
      const options = tx.json(row.options);
      const template = row.template === null ? null : tx.json(row.template as Record<string, never>);
      await tx`
        insert into webhooks (wallet_id, webhook_id, url, headers, format, template, options, include_attachments,
                              schedule_cron, schedule_timezone, schedule_active, email, secret, created_at)
        values (${row.wallet_id}, ${row.webhook_id}, ${row.url}, ${headers}, ${row.format},
                ${template}, ${options}, ${row.include_attachments}, ${row.schedule_cron},
                ${row.schedule_timezone}, ${row.schedule_active}, ${row.email}, ${row.secret}, ${row.created_at})
        on conflict (wallet_id, webhook_id) do update set url = excluded.url, headers = excluded.headers,
          format = excluded.format, template = excluded.template, options = excluded.options,
          include_attachments = excluded.include_attachments, schedule_cron = excluded.schedule_cron,
          schedule_timezone = excluded.schedule_timezone, schedule_active = excluded.schedule_active,
          email = excluded.email, secret = excluded.secret, created_at = excluded.created_at`;
    } else if (event.type === "WebhookDeleted") {
      await tx`delete from webhooks where wallet_id = ${event.walletId} and webhook_id = ${event.data.webhookId}`;
    }
  },
  // A deactivated wallet's webhooks and mailboxes are gone (CONTRACT section 3).
  removedWithWallet: true,
};

/** One webhook of a wallet, or undefined. */
export async function findWebhook(
  sql: Queryable,
  walletId: string,
  webhookId: string,
): Promise<WebhookRow | undefined> {
  const [row] = await sql<WebhookRow[]>`
    select * from webhooks where wallet_id = ${walletId} and webhook_id = ${webhookId}`;
  return row;
}

/** A wallet's webhooks in creation order. */
export async function listWebhooks(sql: Queryable, walletId: string): Promise<WebhookRow[]> {
  return await sql<WebhookRow[]>`
    select * from webhooks where wallet_id = ${walletId} order by created_at, webhook_id`;
}

export async function countWebhooks(sql: Queryable, walletId: string): Promise<number> {
  const [row] = await sql<
    { n: number }[]
  >`select count(*)::int as n from webhooks where wallet_id = ${walletId}`;
  return row.n;
}

/** The newest creation time in a wallet, so the next one can be placed strictly after it. */
export async function latestWebhookCreation(sql: Queryable, walletId: string): Promise<Date | undefined> {
  const [row] = await sql<{ at: Date | null }[]>`
    select max(created_at) as at from webhooks where wallet_id = ${walletId}`;
  return row.at ?? undefined;
}

export interface WebhookKey {
  walletId: string;
  webhookId: string;
}

/** One webhook as a ledger read. */
export const webhookRead = rowRead<WebhookKey, WebhookRow>(webhooksProjection, {
  name: "webhook",
  id: ({ walletId, webhookId }) => JSON.stringify([walletId, webhookId]),
  async load(sql, keys) {
    const rows = await sql<WebhookRow[]>`
      select h.* from jsonb_to_recordset(${sql.json(keys as any)}) as x("walletId" text, "webhookId" text)
      join webhooks h on h.wallet_id = x."walletId" and h.webhook_id = x."webhookId"`;
    return new Map(rows.map((row) => [JSON.stringify([row.wallet_id, row.webhook_id]), row]));
  },
});

/**
 * The mailbox webhook receiving mail at `address` (lowercase) and its owner's balance, for the SMTP
 * receiver: only a webhook in mailbox mode of an active wallet; a scheduled webhook keeps its
 * address but takes no mail.
 */
export async function findMailbox(
  sql: Queryable,
  address: string,
): Promise<{ webhook: WebhookRow; balance: number } | undefined> {
  const [row] = await sql<(WebhookRow & { owner_balance: number })[]>`
    select h.*, w.balance as owner_balance from webhooks h join wallets w on w.wallet_id = h.wallet_id
    where h.email = ${address.toLowerCase()} and h.schedule_cron is null and w.deactivated_at is null`;
  if (!row) return undefined;
  const { owner_balance, ...webhook } = row;
  return { webhook, balance: owner_balance };
}

/** All of a wallet's webhooks by id, as a ledger read (counts, creation order, the list). */
export const walletWebhooksRead: ReadKind<string, Map<string, WebhookRow>> = {
  name: "wallet webhooks",
  id: (walletId) => walletId,
  async load(sql, walletIds) {
    const rows = await sql<WebhookRow[]>`select * from webhooks where wallet_id = any(${walletIds})`;
    const found = new Map(walletIds.map((id) => [id, new Map<string, WebhookRow>()]));
    for (const row of rows) found.get(row.wallet_id)!.set(row.webhook_id, row);
    return found;
  },
  touches: (event) => isWebhookEvent(event) ? [event.walletId] : [],
  evolve(rows, event) {
    const next = new Map(rows);
    const webhookId = (event.data as { webhookId: string }).webhookId;
    const row = webhooksProjection.evolve(next.get(webhookId), event);
    if (row) next.set(webhookId, row);
    else next.delete(webhookId);
    return next;
  },
};

/** A wallet's webhooks in creation order. */
export function inCreationOrder(rows: Iterable<WebhookRow>): WebhookRow[] {
  return [...rows].sort((a, b) =>
    a.created_at.getTime() - b.created_at.getTime() || (a.webhook_id < b.webhook_id ? -1 : 1)
  );
}
