// How events move credits: which events change a balance, by how much, and the balance they say
// they left. The wallet projection folds with it and the audit recomputes every balance from it.
import type { EventType, NewEvent } from "./catalogue.ts";

/**
 * How an event moves credits: the signed change and the balance it says it left.
 * The audit recomputes every balance from this alone; the SQL form below must say the same.
 */
export const MONEY_FIELDS: Partial<Record<EventType, { field: "amount" | "cost"; sign: 1 | -1 }>> = {
  CreditsGranted: { field: "amount", sign: 1 },
  CreditsPurchased: { field: "amount", sign: 1 },
  CallBilled: { field: "cost", sign: -1 },
};

export function creditChange(event: NewEvent): { delta: number; balance: number } | null {
  const rule = MONEY_FIELDS[event.type];
  if (!rule) return null;
  const data = event.data as Record<string, number>;
  return { delta: rule.sign * data[rule.field], balance: data.balance };
}

/** The same rule as a SQL expression over `type` and `data`, for set-based audits. */
export function creditDeltaSql(): string {
  const arms = Object.entries(MONEY_FIELDS).map(([type, rule]) =>
    `when '${type}' then ${rule!.sign === -1 ? "-" : ""}(data->>'${rule!.field}')::bigint`
  );
  return `(case type ${arms.join(" ")} else 0 end)`;
}
