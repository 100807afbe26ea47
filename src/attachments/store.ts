// Stored attachments (table `attachments`): the files behind signed download links. Email
// attachments live 7 days and leave with their time partition; the sample file of test
// deliveries lives forever in a partition without an upper bound. Each wallet's stored bytes are
// counted beside them (table `attachment_usage`), so the acceptance of a mail can hold them to a bound.
import type { Queryable, Sql } from "../db/connect.ts";
import type { Effect } from "../ledger/command.ts";
import type { EffectApplier } from "../ledger/pending_writes.ts";
import type { ReadKind } from "../../projections/projection.ts";
import type { StoredEvent } from "../../events/catalogue.ts";
import {
  expiryPartitioning,
  maintainPartitions,
  type PartitionUpkeep,
  type TimePartitioning,
} from "../db/partitions.ts";

export const ATTACHMENT_RETENTION_MS = 7 * 24 * 3600 * 1000;

export const ATTACHMENT_PARTITIONING = expiryPartitioning("attachments", ATTACHMENT_RETENTION_MS);

/** The per-wallet byte counts, in the same partitions as the files they count. */
export const ATTACHMENT_USAGE_PARTITIONING: TimePartitioning = {
  ...ATTACHMENT_PARTITIONING,
  table: "attachment_usage",
};

/** ATTACHMENT_STORAGE_PER_WALLET's default: 256 MiB over the 7 days, some 35 mails of 7.5 MB of files. */
export const DEFAULT_ATTACHMENT_STORAGE_PER_WALLET = 256 * 1024 * 1024;

/** The usage row of files expiring at `expiresAt`: the last millisecond of its partition's range. */
export function usageRangeEnd(expiresAt: Date): Date {
  const width = ATTACHMENT_PARTITIONING.widthMs;
  return new Date(Math.floor(expiresAt.getTime() / width) * width + width - 1);
}

export interface Attachment {
  walletId: string;
  id: string;
  filename: string;
  contentType: string;
  size: number;
  content: Uint8Array;
  expiresAt: Date;
}

export interface NewAttachment {
  walletId: string;
  id: string;
  filename: string;
  contentType: string;
  content: Uint8Array;
}

/** Stores a file for 7 days, in the transaction that accepts the email. */
export interface StoreAttachment extends Effect {
  type: "storeAttachment";
  file: NewAttachment;
}

export const storeAttachments: EffectApplier<StoreAttachment> = {
  async apply(tx, effects, now) {
    const expiresAt = new Date(now.getTime() + ATTACHMENT_RETENTION_MS);
    const rows = effects.map(({ file }) => ({
      wallet_id: file.walletId,
      id: file.id,
      filename: file.filename,
      content_type: file.contentType,
      size: file.content.byteLength,
      content: file.content,
      created_at: now,
      expires_at: expiresAt,
    }));
    await tx`insert into attachments ${tx(rows)}`;
    const usage = new Map<string, number>();
    for (const row of rows) usage.set(row.wallet_id, (usage.get(row.wallet_id) ?? 0) + row.size);
    const rangeEnd = usageRangeEnd(expiresAt);
    await tx`
      insert into attachment_usage (wallet_id, expires_at, bytes)
      select wallet_id, ${rangeEnd}::timestamptz, bytes
      from unnest(${[...usage.keys()]}::text[], ${[...usage.values()]}::bigint[]) as x(wallet_id, bytes)
      on conflict (wallet_id, expires_at) do update set bytes = attachment_usage.bytes + excluded.bytes`;
  },
};

/** The bytes a stored email's files add to its wallet's storage (those forwarded have an id). */
function storedBytesOf(event: StoredEvent): number {
  if (event.type !== "EmailReceived") return 0;
  return event.data.attachments.reduce((sum, file) => sum + (file.id === undefined ? 0 : file.size), 0);
}

/** A wallet's stored attachment bytes, as a ledger read: loaded under the wallet's lock. */
export const attachmentUsageRead: ReadKind<string, number> = {
  name: "attachment usage",
  id: (walletId) => walletId,
  async load(sql, walletIds, now) {
    const rows = await sql<{ wallet_id: string; bytes: string }[]>`
      select wallet_id, sum(bytes)::text as bytes from attachment_usage
      where wallet_id = any(${walletIds}) and expires_at > ${now}
      group by wallet_id`;
    return new Map(rows.map((row) => [row.wallet_id, Number(row.bytes)]));
  },
  touches(event) {
    return storedBytesOf(event) > 0 ? [event.walletId] : [];
  },
  evolve(bytes, event) {
    return (bytes ?? 0) + storedBytesOf(event);
  },
};

interface AttachmentRow {
  wallet_id: string;
  id: string;
  filename: string;
  content_type: string;
  size: number;
  content: Uint8Array;
  expires_at: Date;
}

/** A live attachment, or undefined when it is missing or expired. */
export async function readAttachment(
  sql: Queryable,
  { walletId, id, now }: { walletId: string; id: string; now: Date },
): Promise<Attachment | undefined> {
  const [row] = await sql<AttachmentRow[]>`
    select wallet_id, id, filename, content_type, size, content, expires_at from attachments
    where wallet_id = ${walletId} and id = ${id} and expires_at > ${now}`;
  if (!row) return undefined;
  return {
    walletId: row.wallet_id,
    id: row.id,
    filename: row.filename,
    contentType: row.content_type,
    size: row.size,
    content: new Uint8Array(row.content),
    expiresAt: row.expires_at,
  };
}

/**
 * Creates the partitions ahead and drops the expired ones, of the files and of their counts; the
 * forever partition stays.
 */
export async function sweepExpiredAttachments(sql: Sql, now: Date): Promise<PartitionUpkeep> {
  const files = await maintainPartitions(sql, ATTACHMENT_PARTITIONING, now);
  const usage = await maintainPartitions(sql, ATTACHMENT_USAGE_PARTITIONING, now);
  return {
    created: [...files.created, ...usage.created],
    dropped: [...files.dropped, ...usage.dropped],
    strays: files.strays + usage.strays,
  };
}

/** Where the service's own files live: no wallet id is ever this (wallet ids are 64 hex digits). */
export const SERVICE_OWNER = "service";
// The sample file never expires; the year 9999 puts it in the partition without an upper bound
// (migration 006), which the sweep never drops, without `infinity`, which JavaScript dates cannot hold.
const NEVER = new Date("9999-12-31T00:00:00Z");

/** Stores (or refreshes) one of the service's own files; run at start-up, by every instance alike. */
export async function ensureServiceFile(
  sql: Queryable,
  file: Omit<NewAttachment, "walletId">,
  now: Date,
): Promise<void> {
  await sql`
    insert into attachments (wallet_id, id, filename, content_type, size, content, created_at, expires_at)
    values (${SERVICE_OWNER}, ${file.id}, ${file.filename}, ${file.contentType}, ${file.content.byteLength},
            ${file.content}, ${now}, ${NEVER})
    on conflict (wallet_id, id, expires_at) do update set filename = excluded.filename,
      content_type = excluded.content_type, size = excluded.size, content = excluded.content`;
}
