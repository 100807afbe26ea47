// The noisy-neighbour figures and their verdicts, pure: latency summaries, each phase's checks
// against the targets of issue 21 (victim beside an attack vs. alone), and the printed lines.

/** Issue 21's targets, in the task's figures. */
export const TARGETS = {
  /** The victim keeps at least this share of its control KV throughput. */
  minThroughputRatio: 0.9,
  /** ... and at most this multiple of its control p99. */
  maxP99Ratio: 1.5,
  /** Each of its mails gets `250` within this time of the first try. */
  mailAcceptMs: 1000,
  /** Each delivery's first byte reaches its receiver within this time of the `250`. */
  deliveryStartMs: 2000,
  /** The service's peak resident memory stays under this. */
  maxRssMb: 500,
} as const;

export interface LatencySummary {
  count: number;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
}

/** The victim's KV calls over one measured window. */
export interface KvFigures {
  /** Calls answered 2xx. */
  calls: number;
  /** Calls answered otherwise, or not answered. */
  errors: number;
  seconds: number;
  /** 2xx calls per second. */
  perSecond: number;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
}

/** The victim's mail: time from the first try to `250`, and from `250` to the delivery's first byte. */
export interface MailFigures {
  sent: number;
  accepted: number;
  /** Never got `250` before the task stopped waiting: its wait counts in the maximum. */
  notAccepted: number;
  /** Temporary refusals (4xx) met on the way, each followed by a new try. */
  refusals: number;
  acceptP50Ms: number | null;
  acceptMaxMs: number | null;
  /** Accepted mails whose delivery reached the receiver. */
  delivered: number;
  /** Accepted mails whose delivery had not started when the task stopped waiting. */
  undelivered: number;
  deliveryP50Ms: number | null;
  deliveryMaxMs: number | null;
}

/** What the attack's clients saw and what it cost the attacker. */
export interface AttackFigures {
  /** Requests, SMTP sessions or messages the attack made. */
  requests: number;
  /** Answers by status (HTTP status, SMTP code, or `network` when there was none). */
  statuses: Record<string, number>;
  /** 5xx answers that carried no charge (`X-Cost` absent or 0) and no `Retry-After`. */
  unbilled5xx: number;
  /** 5xx answers with `Retry-After`: the attacker was slowed, not served for free. */
  slowed5xx: number;
  /** The attacker's balance before its setup minus after the attack; null without a wallet. */
  creditsSpent: number | null;
  /** Bytes of the `events` rows the attacker's wallets added (sum of pg_column_size). */
  attackerEventBytes: number | null;
  /** A scoped key's spend and cap (attack 7). */
  key?: { spent: number; cap: number };
  /** Attack-specific facts worth printing (sessions held, deliveries requeued ...). */
  notes: string[];
}

export interface PhaseFigures {
  /** An attack's name, or `control N`: the victim alone, between two attacks. */
  name: string;
  kv: KvFigures;
  mail: MailFigures;
  attack?: AttackFigures;
  /**
   * Growth of pg_total_relation_size('events') over the phase (table, TOAST and indexes). This,
   * the rows, the RSS and the CPU run from the attack's set-up on; the victim's figures, over the
   * window alone.
   */
  eventsTableBytes: number;
  /** Sum of pg_column_size of the `events` rows the phase added, every wallet. */
  eventsRowBytes: number;
  /** The service's peak resident memory during the phase (VmHWM after a reset, or sampled VmRSS). */
  peakRssMb: number;
  /**
   * CPU seconds over the phase: the service, the Postgres cluster, this task (the load), and every
   * other process of the machine (with the kernel's share), which the task does not control.
   */
  cpuSeconds: { service: number; postgres: number; task: number; others: number };
}

export interface Check {
  target: string;
  pass: boolean;
  /** The figure the verdict was made on. */
  detail: string;
}

/** The nearest-rank percentile of ascending values; null when there are none. */
export function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.max(1, Math.ceil(p * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1];
}

export function latencySummary(values: number[]): LatencySummary {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => {
    const value = percentile(sorted, p);
    return value === null ? null : round(value, 1);
  };
  return { count: sorted.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: at(1) };
}

export function round(n: number, digits = 0): number {
  return Math.round(n * 10 ** digits) / 10 ** digits;
}

/** Ratio of two figures, or null when the base is missing or 0. */
export function ratio(value: number | null, base: number | null): number | null {
  if (value === null || base === null || base === 0) return null;
  return round(value / base, 2);
}

/** The victim's KV figures from the latencies of its 2xx calls over `seconds`. */
export function kvFigures(latenciesMs: number[], errors: number, seconds: number): KvFigures {
  const summary = latencySummary(latenciesMs);
  return {
    calls: summary.count,
    errors,
    seconds,
    perSecond: seconds > 0 ? round(summary.count / seconds, 1) : 0,
    p50Ms: summary.p50Ms,
    p99Ms: summary.p99Ms,
    maxMs: summary.maxMs,
  };
}

/** One victim mail, on one clock (ms): when it was first tried, accepted and its delivery began. */
export interface MailRecord {
  startedAt: number;
  acceptedAt: number | null;
  /** Temporary refusals before the `250` (or before the task stopped trying). */
  refusals: number;
  deliveredAt: number | null;
}

/**
 * The mail figures once the task stopped waiting at `endedAt`: a mail never accepted counts with
 * the time it waited, and so does a delivery that never started, so the maximum is a lower bound.
 */
export function mailFigures(records: MailRecord[], endedAt: number): MailFigures {
  const accepted = records.filter((r) => r.acceptedAt !== null);
  const acceptWaits = records.map((r) => (r.acceptedAt ?? endedAt) - r.startedAt);
  const delivered = accepted.filter((r) => r.deliveredAt !== null);
  const deliveryWaits = accepted.map((r) => (r.deliveredAt ?? endedAt) - r.acceptedAt!);
  const acceptSummary = latencySummary(acceptWaits);
  const deliverySummary = latencySummary(deliveryWaits);
  return {
    sent: records.length,
    accepted: accepted.length,
    notAccepted: records.length - accepted.length,
    refusals: records.reduce((sum, r) => sum + r.refusals, 0),
    acceptP50Ms: acceptSummary.p50Ms === null ? null : round(acceptSummary.p50Ms),
    acceptMaxMs: acceptSummary.maxMs === null ? null : round(acceptSummary.maxMs),
    delivered: delivered.length,
    undelivered: accepted.length - delivered.length,
    deliveryP50Ms: deliverySummary.p50Ms === null ? null : round(deliverySummary.p50Ms),
    deliveryMaxMs: deliverySummary.maxMs === null ? null : round(deliverySummary.maxMs),
  };
}

const percent = (r: number | null) => (r === null ? "n/a" : `${Math.round(r * 100)}%`);
const times = (r: number | null) => (r === null ? "n/a" : `${r}x`);
const ms = (v: number | null) => (v === null ? "n/a" : `${v} ms`);

/** The absolute targets of the victim's mail, met or not in one window. */
function mailChecks(mail: MailFigures): Check[] {
  return [
    {
      target: `victim mail accepted within ${TARGETS.mailAcceptMs} ms`,
      pass: mail.sent > 0 && mail.notAccepted === 0 && mail.acceptMaxMs !== null &&
        mail.acceptMaxMs <= TARGETS.mailAcceptMs,
      detail: `max ${ms(mail.acceptMaxMs)}, ${mail.accepted} of ${mail.sent} accepted`,
    },
    {
      target: `victim deliveries start within ${TARGETS.deliveryStartMs} ms`,
      pass: mail.accepted > 0 && mail.undelivered === 0 && mail.deliveryMaxMs !== null &&
        mail.deliveryMaxMs <= TARGETS.deliveryStartMs,
      detail: `max ${ms(mail.deliveryMaxMs)}, ${mail.delivered} of ${mail.accepted} started`,
    },
  ];
}

/** What an attack's window is compared with: the victim alone, in the windows around it. */
export interface KvReference {
  /** Which control windows it comes from. */
  from: string[];
  perSecond: number;
  p99Ms: number | null;
}

/**
 * The mean of the control windows before and after an attack (the one before alone when there is
 * no after), so that the machine's drift over the pair counts on both sides.
 */
export function controlReference(before: PhaseFigures, after?: PhaseFigures): KvReference {
  const controls = after ? [before, after] : [before];
  const p99s = controls.map((c) => c.kv.p99Ms);
  return {
    from: controls.map((c) => c.name),
    perSecond: round(controls.reduce((sum, c) => sum + c.kv.perSecond, 0) / controls.length, 1),
    p99Ms: p99s.includes(null) ? null : round((p99s as number[]).reduce((a, b) => a + b, 0) / p99s.length, 1),
  };
}

/** The verdicts of an attack's window, its KV figures against the victim alone (`control`). */
export function attackChecks(phase: PhaseFigures, control: KvReference): Check[] {
  const throughput = ratio(phase.kv.perSecond, control.perSecond);
  const p99 = ratio(phase.kv.p99Ms, control.p99Ms);
  const checks: Check[] = [
    {
      target: `victim KV throughput >= ${percent(TARGETS.minThroughputRatio)} of control`,
      // On the figures themselves: the ratio shown is rounded.
      pass: control.perSecond > 0 && phase.kv.perSecond >= TARGETS.minThroughputRatio * control.perSecond,
      detail: `${round(phase.kv.perSecond)} vs ${round(control.perSecond)} calls/s: ${percent(throughput)}`,
    },
    {
      target: `victim KV p99 <= ${TARGETS.maxP99Ratio}x control`,
      pass: phase.kv.p99Ms !== null && control.p99Ms !== null &&
        phase.kv.p99Ms <= TARGETS.maxP99Ratio * control.p99Ms,
      detail: `${ms(phase.kv.p99Ms)} vs ${ms(control.p99Ms)}: ${times(p99)}`,
    },
    ...mailChecks(phase.mail),
  ];
  if (phase.attack) {
    checks.push({
      target: "attacker gets no unbilled 5xx",
      pass: phase.attack.unbilled5xx === 0,
      detail: `${phase.attack.unbilled5xx} of ${phase.attack.requests}`,
    });
  }
  checks.push({
    target: `service RSS < ${TARGETS.maxRssMb} MB`,
    pass: phase.peakRssMb < TARGETS.maxRssMb,
    detail: `peak ${phase.peakRssMb} MB`,
  });
  if (phase.attack?.key) {
    const key = phase.attack.key;
    checks.push({
      target: "the capped key spends no more than its cap",
      pass: key.spent <= key.cap,
      detail: `spent ${key.spent} of ${key.cap}`,
    });
  }
  return checks;
}

/**
 * A control window is the reference, not judged; but when the victim alone already misses the
 * mail targets or the memory bound, the attack's figures beside it mean less, and the task says so.
 */
export function controlWarnings(control: PhaseFigures): string[] {
  const warnings = mailChecks(control.mail).filter((c) => !c.pass).map((c) =>
    `the victim alone missed "${c.target}" (${c.detail})`
  );
  if (control.peakRssMb >= TARGETS.maxRssMb) {
    warnings.push(`the service held ${control.peakRssMb} MB with the victim alone`);
  }
  return warnings;
}

export function formatBytes(bytes: number): string {
  const sign = bytes < 0 ? "-" : "";
  const b = Math.abs(bytes);
  if (b >= 1024 * 1024) return `${sign}${(b / 1024 / 1024).toFixed(1)} MB`;
  if (b >= 1024) return `${sign}${(b / 1024).toFixed(1)} KB`;
  return `${sign}${b} B`;
}

const count = (n: number) => Math.round(n).toLocaleString("en-US");

function statusList(statuses: Record<string, number>): string {
  const entries = Object.entries(statuses).sort((a, b) => b[1] - a[1]);
  return entries.map(([status, n]) => `${status}: ${count(n)}`).join(", ") || "none";
}

/** One window as printed: the figures, then one line per check (a control's warnings instead). */
export function phaseLines(phase: PhaseFigures, checks: Check[], control?: KvReference): string[] {
  const kv = phase.kv;
  const against = control
    ? ` (${percent(ratio(kv.perSecond, control.perSecond))} of the control's ${count(control.perSecond)}), ` +
      `p99 ${ms(kv.p99Ms)} (${times(ratio(kv.p99Ms, control.p99Ms))} the control's ${ms(control.p99Ms)}; ` +
      `control: the mean of ${control.from.join(" and ")})`
    : `, p99 ${ms(kv.p99Ms)}`;
  const mail = phase.mail;
  const lines = [
    `${phase.name}:`,
    `  victim KV: ${count(kv.perSecond)} calls/s${against}, p50 ${ms(kv.p50Ms)}, max ${ms(kv.maxMs)}, ` +
    `${count(kv.errors)} errors`,
    `  victim mail: ${mail.accepted} of ${mail.sent} accepted, p50 ${ms(mail.acceptP50Ms)}, max ` +
    `${ms(mail.acceptMaxMs)} (${mail.refusals} temporary refusals); deliveries ${mail.delivered} of ` +
    `${mail.accepted} started, p50 ${ms(mail.deliveryP50Ms)}, max ${ms(mail.deliveryMaxMs)}`,
  ];
  const attack = phase.attack;
  if (attack) {
    lines.push(
      `  attacker: ${count(attack.requests)} requests (${statusList(attack.statuses)}); ` +
        `${count(attack.unbilled5xx)} unbilled 5xx, ${count(attack.slowed5xx)} 5xx with Retry-After; ` +
        `credits spent ${attack.creditsSpent === null ? "n/a (no wallet)" : count(attack.creditsSpent)}` +
        (attack.key ? `; the key spent ${attack.key.spent} of its cap ${attack.key.cap}` : ""),
    );
    for (const note of attack.notes) lines.push(`  attacker: ${note}`);
  }
  // An attack's memory, CPU and log figures run from its set-up on (the mails it sends first ...).
  const since = attack ? " (its set-up included)" : "";
  lines.push(
    `  permanent log${since}: events table +${formatBytes(phase.eventsTableBytes)} ` +
      `(pg_total_relation_size), rows added ${formatBytes(phase.eventsRowBytes)} (sum of pg_column_size)` +
      (attack?.attackerEventBytes != null
        ? `, the attacker's ${formatBytes(attack.attackerEventBytes)}`
        : ""),
    `  service${since}: peak RSS ${phase.peakRssMb} MB; CPU seconds: service ${phase.cpuSeconds.service}, ` +
      `Postgres ${phase.cpuSeconds.postgres}, this task (victim and attacker clients) ${phase.cpuSeconds.task}, ` +
      `other processes ${phase.cpuSeconds.others}`,
  );
  for (const check of checks) {
    lines.push(`  ${check.pass ? "PASS" : "FAIL"} ${check.target}: ${check.detail}`);
  }
  if (!control) { for (const warning of controlWarnings(phase)) lines.push(`  NOTE ${warning}`); }
  return lines;
}

/** The summary table: one row per window, an attack's ratios against its control, the checks missed. */
export function summaryLines(
  rows: { phase: PhaseFigures; checks: Check[]; control?: KvReference }[],
): string[] {
  const lines = [
    "window                               KV/s  ratio  p99 ms  ratio  mail max ms  delivery max ms  RSS MB  missed",
  ];
  for (const { phase, checks, control } of rows) {
    const missed = checks.filter((c) => !c.pass).length;
    lines.push(
      [
        phase.name.padEnd(34),
        count(phase.kv.perSecond).padStart(6),
        String(control ? ratio(phase.kv.perSecond, control.perSecond) ?? "n/a" : "").padStart(6),
        String(phase.kv.p99Ms ?? "n/a").padStart(7),
        String(control ? ratio(phase.kv.p99Ms, control.p99Ms) ?? "n/a" : "").padStart(6),
        String(phase.mail.acceptMaxMs ?? "n/a").padStart(12),
        String(phase.mail.deliveryMaxMs ?? "n/a").padStart(16),
        String(phase.peakRssMb).padStart(7),
        String(missed).padStart(7),
      ].join(" "),
    );
  }
  return lines;
}
