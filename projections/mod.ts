// Every read model kept from the log. The wallet model is folded by the ledger itself (it holds
// the locked row already); the others are applied event by event.
import type { Projection } from "./projection.ts";
import { walletsProjection } from "./wallets.ts";
import { kvProjection } from "./kv.ts";
import { callLogsProjection } from "./call_logs.ts";
import { idempotentRepliesProjection } from "./idempotent_replies.ts";
import { paymentsProjection } from "./payments.ts";
import { walletSettingsProjection } from "./wallet_settings.ts";
import { webhooksProjection } from "./webhooks.ts";
import { schedulesProjection } from "./schedules.ts";
import { scopedKeysProjection } from "./scoped_keys.ts";
import { deliveryHistoryProjection } from "./delivery_history.ts";
import { webhookHealthProjection } from "./webhook_health.ts";
import { dailyUsageProjection } from "./daily_usage.ts";
import { viewCallsProjection } from "./view_calls.ts";

export const INLINE_PROJECTIONS: Projection<any>[] = [
  kvProjection,
  callLogsProjection,
  idempotentRepliesProjection,
  paymentsProjection,
  walletSettingsProjection,
  webhooksProjection,
  schedulesProjection,
  scopedKeysProjection,
  deliveryHistoryProjection,
  webhookHealthProjection,
  dailyUsageProjection,
  viewCallsProjection,
];

export const PROJECTIONS: Projection<any>[] = [walletsProjection, ...INLINE_PROJECTIONS];
