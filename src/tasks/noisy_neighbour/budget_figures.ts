// The permanent-log budget's figures, pure: the probes' rows, the worst bytes per credit, each free
// limit's bytes a day under the code's rate limits, and the lines the tasks print. log_budget.ts
// measures the probes against a running service.
import { VIEW_CALLS_PER_MINUTE } from "../../wallets/view_limit.ts";
import { FREE_CALLS_PER_DAY } from "../../../projections/wallets.ts";
import { formatBytes } from "./report.ts";

/** The rate limits that bound free calls, per wallet. */
export type FreeGroup = "views" | "other";

/**
 * Free calls a wallet may make a day under each limit of the code; undefined: no limit found. The
 * free views have VIEW_CALLS_PER_MINUTE of their own, and every call that charges nothing, views
 * included, shares the wallet's allowance of free calls (FREE_CALLS_PER_DAY, issue 21).
 */
export const FREE_ALLOWANCES_PER_DAY: Record<FreeGroup, number | undefined> = {
  views: Math.min(VIEW_CALLS_PER_MINUTE * 24 * 60, FREE_CALLS_PER_DAY),
  other: FREE_CALLS_PER_DAY,
};

/** The allowance every group shares: no more free calls a day than this, whatever their group. */
export const SHARED_FREE_CALLS_PER_DAY: number | null = FREE_CALLS_PER_DAY;

export const FREE_GROUP_NAMES: Record<FreeGroup, string> = {
  views: "free views (GET /token/ledger, /token/usage; VIEW_CALLS_PER_MINUTE)",
  other: "other free and refused calls (GET /recharge, 402, 429, MCP wallet_balance)",
};

export interface BudgetProbe {
  name: string;
  status: number | string;
  /** Credits the call was charged. */
  credits: number;
  /** Bytes of the wallet's `events` rows the call added (sum of pg_column_size). */
  bytes: number;
}

export interface FreeProbe extends BudgetProbe {
  group: FreeGroup;
}

export interface LogBudget {
  /** The longest query string the service took (the probes' padding). */
  queryChars: number;
  paid: BudgetProbe[];
  /** The most bytes per credit among the paid probes, and which one. */
  maxBytesPerCredit: number;
  worstPaid: string;
  free: FreeProbe[];
  groups: {
    group: FreeGroup;
    allowancePerDay: number | null;
    maxBytesPerCall: number;
    bytesPerDay: number | null;
  }[];
  /** Bytes a day of free calls, every limit at its allowance; null: a free call with bytes has no limit. */
  freeBytesPerDay: number | null;
}

/** The budget's arithmetic, pure: the worst paid probe, and each free limit's bytes a day. */
export function budgetFigures(
  paid: BudgetProbe[],
  free: FreeProbe[],
  { allowances = FREE_ALLOWANCES_PER_DAY, sharedPerDay = SHARED_FREE_CALLS_PER_DAY }: {
    allowances?: Record<FreeGroup, number | undefined>;
    sharedPerDay?: number | null;
  } = {},
): Pick<LogBudget, "maxBytesPerCredit" | "worstPaid" | "groups" | "freeBytesPerDay"> {
  let maxBytesPerCredit = 0;
  let worstPaid = "none";
  for (const probe of paid) {
    if (probe.credits <= 0) continue;
    const perCredit = Math.round(probe.bytes / probe.credits);
    if (perCredit > maxBytesPerCredit) [maxBytesPerCredit, worstPaid] = [perCredit, probe.name];
  }
  const groups = (Object.keys(allowances) as FreeGroup[]).map((group) => {
    const maxBytesPerCall = Math.max(0, ...free.filter((p) => p.group === group).map((p) => p.bytes));
    const allowance = allowances[group];
    return {
      group,
      allowancePerDay: allowance ?? null,
      maxBytesPerCall,
      bytesPerDay: allowance === undefined ? (maxBytesPerCall === 0 ? 0 : null) : maxBytesPerCall * allowance,
    };
  });
  const separate = groups.some((g) => g.bytesPerDay === null)
    ? null
    : groups.reduce((sum, g) => sum + g.bytesPerDay!, 0);
  // A shared allowance bounds them all together: at most that many calls, each at most the largest.
  const shared = sharedPerDay === null
    ? null
    : sharedPerDay * Math.max(0, ...groups.map((g) => g.maxBytesPerCall));
  const freeBytesPerDay = separate === null
    ? shared
    : shared === null
    ? separate
    : Math.min(separate, shared);
  return { maxBytesPerCredit, worstPaid, groups, freeBytesPerDay };
}

export function budgetLines(budget: LogBudget): string[] {
  const probe = (p: BudgetProbe) =>
    `${p.name} (${p.status}): ${formatBytes(p.bytes)}` +
    (p.credits > 0 ? ` for ${p.credits} credit${p.credits === 1 ? "" : "s"}` : " free");
  const lines = [
    `permanent-log budget (rows of the wallet's events, sum of pg_column_size; queries of ${budget.queryChars} ` +
    `random characters):`,
    `  per credit spent: at most ${formatBytes(budget.maxBytesPerCredit)} (${budget.worstPaid}); ` +
    budget.paid.map(probe).join("; "),
    `  free and refused calls: ${budget.free.map(probe).join("; ")}`,
  ];
  for (const g of budget.groups) {
    lines.push(
      `  ${FREE_GROUP_NAMES[g.group]}: ${formatBytes(g.maxBytesPerCall)} a call, ` +
        (g.allowancePerDay === null
          ? `no limit in the code: ${g.bytesPerDay === 0 ? "nothing written" : "unbounded"}`
          : `${g.allowancePerDay.toLocaleString("en-US")} calls a day: ${formatBytes(g.bytesPerDay!)} a day`),
    );
  }
  lines.push(
    `  free per wallet and day: ${
      budget.freeBytesPerDay === null
        ? "unbounded (a free path with no limit)"
        : formatBytes(budget.freeBytesPerDay)
    }`,
  );
  return lines;
}
