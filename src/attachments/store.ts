// Stored attachments (table `attachments`): the files behind signed download links. Email
// attachments live 7 days and leave with their time partition; the sample file of test
// deliveries lives forever in a partition without an upper bound.
import type { Queryable, Sql } from "../db/connect.ts";
import type { Effect } from "../ledger/command.ts";
import type { EffectApplier } from "../ledger/pending_writes.ts";
import { maintainPartitions, type PartitionUpkeep, type TimePartitioning } from "../db/partitions.ts";

export const ATTACHMENT_RETENTION_MS = 7 * 24 * 3600 * 1000;
const HOUR_MS = 3600 * 1000;

/** Like the call logs: 12-hour partitions by expiry, a day ahead of the furthest new expiry. */
export const ATTACHMENT_PARTITIONING: TimePartitioning = {
  table: "attachments",
  column: "expires_at",
  widthMs: 12 * HOUR_MS,
  aheadMs: ATTACHMENT_RETENTION_MS + 24 * HOUR_MS,
};

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
  walletId: string,
  id: string,
  now: Date,
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

/** Creates the partitions ahead and drops the expired ones; the forever partition stays. */
export async function sweepExpiredAttachments(sql: Sql, now: Date): Promise<PartitionUpkeep> {
  return await maintainPartitions(sql, ATTACHMENT_PARTITIONING, now);
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
