// A wallet's credit movements read straight from the log (GET /token/ledger): every grant, purchase
// and debit since the wallet's first day, newest first. Stream versions are gapless, so a page
// reads one bounded range of versions by the primary key and no read model is needed.
import type { EventType, NewEvent, StoredEvent } from "../events/catalogue.ts";
import type { ReadKind } from "./projection.ts";
import type { Queryable } from "../src/db/connect.ts";

export type MovementType = "grant" | "purchase" | "debit" | "adjustment";

export interface CreditMovement {
  /** The event's stream version: the page cursor. */
  version: number;
  at: Date;
  type: MovementType;
  /** Signed: credits in are positive, debits negative. */
  amount: number;
  /** The balance after the movement. */
  balance: number;
  /** The call id, payment id, email Message-ID, run (`webhookId@plannedAt`) or grant reason. */
  ref: string;
  /** The usage type of the call (`scheduled` for runs), `payment`, or null for grants. */
  endpoint: string | null;
}

/** The credits a new wallet starts with are a grant; any other grant is an operator's adjustment. */
export const WELCOME_REASON = "welcome";
/** Most entries a page may hold; the read loads one more to know whether more follow. */
export const MAX_MOVEMENTS = 100;
/** Most events one page looks at: a page's work is bounded however sparse the movements are. */
export const MOVEMENT_SCAN_EVENTS = 1000;

/** The events of the stream that a debit's own decision appended after it (email, run). */
type Follower = NewEvent & { version: number };

/** The movement an event is, or null; `next` is the event right after it in the stream, if known. */
export function movementOf(
  event: NewEvent & { version: number; recordedAt: Date },
  next?: Follower,
): CreditMovement | null {
  const base = { version: event.version, at: event.recordedAt };
  switch (event.type) {
    case "CreditsGranted": {
      const { amount, balance, reason } = event.data;
      const type = reason === WELCOME_REASON ? "grant" : "adjustment";
      return { ...base, type, amount, balance, ref: reason, endpoint: null };
    }
    case "CreditsPurchased": {
      const { amount, balance, paymentId } = event.data;
      return { ...base, type: "purchase", amount, balance, ref: paymentId, endpoint: "payment" };
    }
    case "CallBilled": {
      const d = event.data;
      if (d.cost === 0) return null;
      const run = d.method === "CRON";
      return {
        ...base,
        type: "debit",
        amount: -d.cost,
        balance: d.balance,
        ref: refOfCall(d.callId, event.version, next),
        endpoint: run ? "scheduled" : d.endpoint,
      };
    }
    default:
      return null;
  }
}

/** An email's or a run's debit names the mail or the run its decision recorded right after it. */
function refOfCall(callId: string, version: number, next: Follower | undefined): string {
  if (next?.version !== version + 1) return callId;
  if (next.type === "EmailReceived") return next.data.messageId;
  if (next.type === "ScheduleFired") return `${next.data.webhookId}@${next.data.plannedAt}`;
  return callId;
}

export interface MovementsKey {
  walletId: string;
  /** Only versions below this one: the cursor of a later page; absent for the newest page. */
  before?: number;
}

export interface MovementsPage {
  /** Newest first: every movement from `lowestScanned` up, or the newest MAX_MOVEMENTS + 1 of them. */
  movements: CreditMovement[];
  /** The lowest stream version the page looked at (1: the wallet's first event). */
  lowestScanned: number;
}

const MONEY_TYPES: EventType[] = ["CreditsGranted", "CreditsPurchased", "CallBilled"];

interface MovementRow {
  top: number;
  version: number | null;
  type: EventType;
  data: any;
  recorded_at: Date;
  next_type: EventType | null;
  next_data: any;
}

/** One page: the wallet's top version (under the lock) and the newest movements at or below it. */
async function loadPage(sql: Queryable, { walletId, before }: MovementsKey): Promise<MovementsPage> {
  const rows = await sql<MovementRow[]>`
    with top as (
      select ${before === undefined ? sql`version` : sql`least(version, ${before - 1})`} as top
      from wallets where wallet_id = ${walletId}
    )
    select top.top, m.* from top left join lateral (
      select e.version, e.type, e.data - 'idempotency' as data, e.recorded_at, n.type as next_type,
             jsonb_build_object('messageId', n.data->'messageId', 'webhookId', n.data->'webhookId',
                                'plannedAt', n.data->'plannedAt') as next_data
      from events e
      left join events n on e.type = 'CallBilled' and n.wallet_id = e.wallet_id and n.version = e.version + 1
        and n.type in ('EmailReceived', 'ScheduleFired')
      where e.wallet_id = ${walletId} and e.version between top.top - ${MOVEMENT_SCAN_EVENTS - 1} and top.top
        and e.type = any(${MONEY_TYPES}) and (e.type <> 'CallBilled' or (e.data->>'cost')::bigint > 0)
      order by e.version desc
      limit ${MAX_MOVEMENTS + 1}
    ) m on true
    order by m.version desc`;
  const top = rows[0]?.top ?? 0;
  const movements = rows.filter((row) => row.version !== null).map((row) => {
    const version = row.version!;
    const next = row.next_type
      ? { type: row.next_type, data: row.next_data, version: version + 1 }
      : undefined;
    const event = { type: row.type, data: row.data } as NewEvent;
    return movementOf({ ...event, version, recordedAt: row.recorded_at }, next as Follower | undefined)!;
  });
  return { movements, lowestScanned: Math.max(1, top - MOVEMENT_SCAN_EVENTS + 1) };
}

/** Whether the event names the mail or run of the debit right before it. */
const namesDebit = (event: StoredEvent) => event.type === "EmailReceived" || event.type === "ScheduleFired";

/**
 * The movements of a range of versions as a ledger read, loaded in the round trip that locks the
 * wallet. The newest page follows the batch's own events, so its first balance is the wallet's;
 * later pages lie below a version that is already written and never change.
 */
export const creditMovementsRead: ReadKind<MovementsKey, MovementsPage> = {
  name: "credit movements",
  id: ({ walletId, before }) => before === undefined ? walletId : `${walletId}<${before}`,
  async load(sql, keys) {
    const pages = await Promise.all(keys.map((key) => loadPage(sql, key)));
    return new Map(keys.map((key, i) => [creditMovementsRead.id(key), pages[i]]));
  },
  // Only the newest page's id is ever touched: the pages below a cursor are history.
  touches: (event) => MONEY_TYPES.includes(event.type) || namesDebit(event) ? [event.walletId] : [],
  // From no value: the decider's fold of a whole stream (the ledger always loads a page).
  evolve(page = { movements: [], lowestScanned: 1 }, event) {
    const [newest] = page.movements;
    if (namesDebit(event)) {
      if (newest?.type !== "debit") return page;
      const ref = refOfCall(newest.ref, newest.version, event);
      return { ...page, movements: [{ ...newest, ref }, ...page.movements.slice(1)] };
    }
    const movement = movementOf(event);
    if (!movement) return page;
    return { ...page, movements: [movement, ...page.movements].slice(0, MAX_MOVEMENTS + 1) };
  },
};
