// One phase of the task: the victim's steady workload for a bounded time, alone or beside one
// attack, with what the phase cost the service (memory, CPU), the permanent log and the attacker.
import type { Sql } from "../../db/connect.ts";
import type { AttackContext, AttackOutcome } from "./attacks/mod.ts";
import { WALLETLESS } from "./attacks/mod.ts";
import { readBalance } from "./api.ts";
import { startJob } from "./jobs.ts";
import { eventsMark, rowBytesSince, walletIdOf } from "./log_bytes.ts";
import { startPhaseMeter } from "./process_stats.ts";
import { type AttackFigures, kvFigures, mailFigures, type PhaseFigures } from "./report.ts";
import { type AttackName, LOAD, type NoisySettings } from "./settings.ts";
import type { VictimKvParams, VictimKvResult } from "./victim_kv.ts";
import { startVictimMail, type VictimMailbox } from "./victim_mail.ts";

/** After the window, how long the victim's last mails may still take to be accepted and delivered. */
const MAIL_WAIT_MS = 20_000;
/** An attack's set-up (mails that must fail first, sessions to open) must not take longer. */
const SETUP_TIMEOUT_MS = 120_000;

export interface PhaseRun {
  url: string;
  smtpPort: number;
  servicePid: number;
  postmasterPid: number;
  sql: Sql;
  victim: { token: string; from: string; mailAddress: string };
  mailbox: VictimMailbox;
  attack: AttackContext;
  settings: NoisySettings;
  /** Throws when the service is gone: no figure of a dead service is worth printing. */
  checkAlive(): void;
}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took more than ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** The victim's workload for `seconds`: its KV load in a worker, its mail from here. */
function victimWorkload(run: PhaseRun, phase: string, seconds: number) {
  const params: VictimKvParams = {
    url: run.url,
    token: run.victim.token,
    from: run.victim.from,
    clients: LOAD.victimKvClients,
    seconds,
  };
  const kv = startJob<VictimKvResult>({ job: "victim-kv", params });
  const mail = startVictimMail({
    smtpPort: run.smtpPort,
    address: run.victim.mailAddress,
    mailbox: run.mailbox,
    everyMs: LOAD.victimMailEveryMs,
    phase,
  });
  return { kv, mail };
}

/** A short unmeasured run of the victim's workload, so the control does not measure a cold service. */
export async function warmUp(run: PhaseRun, seconds: number): Promise<void> {
  const { kv, mail } = victimWorkload(run, "warm-up", seconds);
  await kv.done;
  await mail.finish(MAIL_WAIT_MS);
  run.checkAlive();
}

export async function runPhase(run: PhaseRun, name: string, attack?: AttackName): Promise<PhaseFigures> {
  const withWallet = attack !== undefined && !WALLETLESS.has(attack);
  const attacker = run.attack.attacker;
  const before = withWallet ? await readBalance(run.url, attacker) : undefined;
  const mark = await eventsMark(run.sql);
  const meter = startPhaseMeter(run.servicePid, run.postmasterPid);

  const attackJob = attack
    ? startJob<AttackOutcome>({ job: "attack", name: attack, context: run.attack })
    : undefined;
  if (attackJob) {
    await within(Promise.race([attackJob.ready, attackJob.done]), SETUP_TIMEOUT_MS, `${attack}'s set-up`);
  }

  const { kv, mail } = victimWorkload(run, name, run.settings.seconds);
  const kvResult = await kv.done;
  mail.stopSending();
  let outcome: AttackOutcome | undefined;
  if (attackJob) {
    attackJob.stop();
    outcome = await within(attackJob.done, SETUP_TIMEOUT_MS, `${attack}'s stop`);
  }
  const used = meter.stop();
  const { records, endedAt } = await mail.finish(MAIL_WAIT_MS);
  run.checkAlive();

  const after = await eventsMark(run.sql);
  const attackerWallets = [walletIdOf(attacker.token), walletIdOf(run.attack.zero.token)];
  let figures: AttackFigures | undefined;
  if (attack && outcome) {
    const attackerEventBytes = withWallet ? await rowBytesSince(run.sql, mark, attackerWallets) : null;
    const spent = before ? await readBalance(run.url, attacker) : undefined;
    figures = {
      requests: outcome.tally.requests,
      statuses: outcome.tally.statuses,
      unbilled5xx: outcome.tally.unbilled5xx,
      slowed5xx: outcome.tally.slowed5xx,
      // The second read's own cost is not the attack's.
      creditsSpent: before && spent ? before.balance - (spent.balance + spent.cost) : null,
      attackerEventBytes,
      ...(outcome.key ? { key: outcome.key } : {}),
      notes: outcome.notes,
    };
  }
  return {
    name,
    kv: kvFigures(kvResult.latenciesMs, kvResult.errors, kvResult.seconds),
    mail: mailFigures(records, endedAt),
    ...(figures ? { attack: figures } : {}),
    eventsTableBytes: after.tableBytes - mark.tableBytes,
    eventsRowBytes: await rowBytesSince(run.sql, mark),
    peakRssMb: used.peakRssMb,
    cpuSeconds: used.cpuSeconds,
  };
}
