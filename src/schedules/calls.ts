// The billed calls of schedules themselves, apart from the webhooks they belong to: the free preview
// of a schedule's next runs (GET /schedule-preview), within the free views' per-wallet limit. The
// REST route (http/routes/schedule_preview.ts) makes its calls here.
import { billedCall } from "../calls/billed_call.ts";
import { VIEWS } from "../calls/prices.ts";
import { answer, failure, jsonReply } from "../calls/reply.ts";
import { read } from "../ledger/reads.ts";
import { viewCallsRead } from "../../projections/view_calls.ts";
import { withinViewLimit } from "../wallets/view_limit.ts";
import { schedulePreview } from "./preview.ts";

export const scheduleCalls = {
  /** GET /schedule-preview: the next runs of a cron in a zone, by the scheduler's own rules; free. */
  preview({ walletId, cron, timezone }: { walletId: string; cron: string; timezone: string }) {
    return billedCall({
      price: VIEWS.price,
      reads: { calls: read(viewCallsRead, walletId) },
      decide: ({ reads, now }) =>
        withinViewLimit(reads.calls, now, () => {
          const preview = schedulePreview(cron, timezone, now);
          return preview.ok ? answer(jsonReply(200, preview.value)) : failure(400, preview.phrase);
        }),
    });
  },
};
