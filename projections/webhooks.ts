// The webhook registry read model: each webhook's current configuration, its signing secret and its
// mailbox address. Every webhook event carries the whole configuration, so the fold is one step.
// The only place a configuration becomes a row and a row a configuration.
import type { Queryable } from "../src/db/connect.ts";
import type { StoredEvent } from "../events/catalogue.ts";
import { defineProjection, type ReadKind, rowId } from "./projection.ts";
import type { EmailFormat, MailboxWebhook, WebhookConfig } from "./webhook_config.ts";
import { configFromEvent, mailboxAddress } from "./webhook_config_data.ts";

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

/** The row of a configuration. A scheduled webhook's row keeps the mailbox columns' defaults. */
export function rowFromConfig(walletId: string, config: WebhookConfig): WebhookRow {
  const mailbox = config.mode === "mailbox" ? config.mailbox : undefined;
  const schedule = config.mode === "scheduled" ? config.schedule : undefined;
  return {
    wallet_id: walletId,
    webhook_id: config.webhookId,
    url: config.url,
    headers: config.headers,
    format: mailbox?.format ?? null,
    template: mailbox?.template ?? null,
    options: mailbox?.options ?? {},
    include_attachments: mailbox?.includeAttachments ?? true,
    schedule_cron: schedule?.cron ?? null,
    schedule_timezone: schedule?.timezone ?? null,
    schedule_active: schedule?.active ?? null,
    email: config.email ?? null,
    secret: config.secret,
    created_at: config.createdAt,
  };
}

/** The configuration a row holds. */
export function configFromRow(row: WebhookRow): WebhookConfig {
  const common = {
    webhookId: row.webhook_id,
    url: row.url,
    headers: row.headers,
    secret: row.secret,
    createdAt: row.created_at,
  };
  if (row.schedule_cron !== null) {
    const schedule = {
      cron: row.schedule_cron,
      timezone: row.schedule_timezone!,
      active: row.schedule_active ?? true,
    };
    return { ...common, mode: "scheduled", schedule, ...(row.email === null ? {} : { email: row.email }) };
  }
  const mailbox = {
    ...(row.format ? { format: row.format as EmailFormat } : {}),
    ...(row.template ? { template: row.template } : {}),
    options: row.options,
    includeAttachments: row.include_attachments,
  };
  return { ...common, mode: "mailbox", mailbox, email: mailboxAddress(row.webhook_id, row.email) };
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

type WebhookEvent = Extract<StoredEvent, { type: "WebhookCreated" | "WebhookUpdated" | "WebhookDeleted" }>;

function isWebhookEvent(event: StoredEvent): event is WebhookEvent {
  return event.type === "WebhookCreated" || event.type === "WebhookUpdated" ||
    event.type === "WebhookDeleted";
}

export interface WebhookKey {
  walletId: string;
  webhookId: string;
}

/** The key columns of a webhook's row, in each model kept per webhook: this one, schedules, health. */
export function webhookKeyRow(
  { walletId, webhookId }: WebhookKey,
): Pick<WebhookRow, "wallet_id" | "webhook_id"> {
  return { wallet_id: walletId, webhook_id: webhookId };
}

/** The key columns of the per-webhook row an event touches, given the webhook it names (null: none). */
export function touchedWebhookRow(
  walletId: string,
  webhookId: string | null,
): Pick<WebhookRow, "wallet_id" | "webhook_id"> | null {
  return webhookId === null ? null : webhookKeyRow({ walletId, webhookId });
}

export const webhooksProjection = defineProjection<WebhookRow>({
  table: "webhooks",
  columns: COLUMNS,
  keyColumns: ["wallet_id", "webhook_id"],
  keyRow: (event) =>
    isWebhookEvent(event)
      ? webhookKeyRow({ walletId: event.walletId, webhookId: event.data.webhookId })
      : null,
  evolve(_row, event) {
    if (event.type === "WebhookCreated" || event.type === "WebhookUpdated") {
      return rowFromConfig(event.walletId, configFromEvent(event.data));
    }
    return undefined;
  },
  readsPrevious: false,
  // A deactivated wallet's webhooks and mailboxes are gone (CONTRACT section 3).
  removedWithWallet: true,
});

/** One webhook of a wallet, or undefined. */
export async function findWebhook(
  sql: Queryable,
  walletId: string,
  webhookId: string,
): Promise<WebhookConfig | undefined> {
  const [row] = await sql<WebhookRow[]>`
    select * from webhooks where wallet_id = ${walletId} and webhook_id = ${webhookId}`;
  return row && configFromRow(row);
}

/** One webhook's configuration as a ledger read. */
export const webhookRead: ReadKind<WebhookKey, WebhookConfig> = {
  name: "webhook",
  id: (key) => rowId(webhooksProjection.keyColumns, webhookKeyRow(key)),
  async load(sql, keys) {
    const rows = await sql<WebhookRow[]>`
      select h.* from unnest(${keys.map((k) => k.walletId)}::text[], ${
      keys.map((k) => k.webhookId)
    }::text[]) as x(w, id)
      cross join lateral (select * from webhooks e where e.wallet_id = x.w and e.webhook_id = x.id) h`;
    return new Map(rows.map((row) => [rowId(webhooksProjection.keyColumns, row), configFromRow(row)]));
  },
  touches(event) {
    const key = webhooksProjection.keyOf(event);
    return key === null ? [] : [key];
  },
  evolve(_config, event) {
    if (event.type === "WebhookCreated" || event.type === "WebhookUpdated") {
      return configFromEvent(event.data);
    }
    return undefined;
  },
};

/**
 * The mailbox webhook receiving mail at `address` (lowercase) and its owner's balance, for the SMTP
 * receiver: only a webhook in mailbox mode of an active wallet; a scheduled webhook keeps its
 * address but takes no mail.
 */
export async function findMailbox(
  sql: Queryable,
  address: string,
): Promise<{ walletId: string; webhook: MailboxWebhook; balance: number } | undefined> {
  const [row] = await sql<(WebhookRow & { owner_balance: number })[]>`
    select h.*, w.balance as owner_balance from webhooks h join wallets w on w.wallet_id = h.wallet_id
    where h.email = ${address.toLowerCase()} and h.schedule_cron is null and w.deactivated_at is null`;
  if (!row) return undefined;
  const { owner_balance, ...fields } = row;
  const webhook = configFromRow(fields);
  if (webhook.mode !== "mailbox") throw new Error(`Webhook "${webhook.webhookId}" takes no mail`);
  return { walletId: row.wallet_id, webhook, balance: owner_balance };
}

/** All of a wallet's webhooks by id, as a ledger read (counts, creation order, the list). */
export const walletWebhooksRead: ReadKind<string, Map<string, WebhookConfig>> = {
  name: "wallet webhooks",
  id: (walletId) => walletId,
  async load(sql, walletIds) {
    const rows = await sql<WebhookRow[]>`select * from webhooks where wallet_id = any(${walletIds})`;
    const found = new Map(walletIds.map((id) => [id, new Map<string, WebhookConfig>()]));
    for (const row of rows) found.get(row.wallet_id)!.set(row.webhook_id, configFromRow(row));
    return found;
  },
  touches: (event) => isWebhookEvent(event) ? [event.walletId] : [],
  evolve(configs, event) {
    const next = new Map(configs);
    if (event.type === "WebhookCreated" || event.type === "WebhookUpdated") {
      next.set(event.data.webhookId, configFromEvent(event.data));
    } else if (event.type === "WebhookDeleted") {
      next.delete(event.data.webhookId);
    }
    return next;
  },
};

/** Webhooks in creation order (ties, which creation avoids, by id). */
export function inCreationOrder(configs: Iterable<WebhookConfig>): WebhookConfig[] {
  return [...configs].sort((a, b) =>
    a.createdAt.getTime() - b.createdAt.getTime() || (a.webhookId < b.webhookId ? -1 : 1)
  );
}
