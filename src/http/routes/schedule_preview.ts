// GET /schedule-preview (issue 27): the next runs of a cron expression in a time zone, by the rules
// a scheduled webhook is planned with, so a form can show them before the webhook is saved. Free,
// within the free views' per-wallet limit. Outside /webhook/..., where a webhook id could take the name.
import { type OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../env.ts";
import { billed, billing } from "../billing.ts";
import { requireWallet } from "../middleware.ts";
import { VIEWS } from "../../calls/prices.ts";
import { billedRoute, errorResponseDoc, jsonOk, serve } from "../openapi.ts";
import { scheduleCalls } from "../../schedules/calls.ts";
import {
  cronProblem,
  MAX_CRON_LENGTH,
  MAX_TIMEZONE_LENGTH,
  timezoneProblem,
} from "../../../projections/cron.ts";
import { WHOLE_PHRASE } from "../../parsed.ts";
import { PREVIEW_RUNS } from "../../schedules/preview.ts";
import { BILLING_HEADERS, FREE_NOTE, FREE_VIEW_ERRORS } from "./usage.ts";

// Lengths and names are checked by the schedule's own rules, as a refinement of the query, so the
// phrases are POST /webhook's: `Invalid schedule.cron "": must have 5 fields ...`.
const PreviewQuery = z.object({
  cron: z.string({ error: "required: five cron fields" }).openapi({
    minLength: 1,
    description: "Five fields: minute hour day-of-month month day-of-week, as `schedule.cron` of " +
      `POST /webhook (at most ${MAX_CRON_LENGTH} characters)`,
    example: "0 9 * * 1-5",
  }),
  timezone: z.string({ error: "required: an IANA time zone" }).openapi({
    minLength: 1,
    description: `An IANA time zone, as \`schedule.timezone\` (at most ${MAX_TIMEZONE_LENGTH} characters)`,
    example: "Europe/Paris",
  }),
}).superRefine(({ cron, timezone }, ctx) => {
  const problem = cronProblem(cron) ?? timezoneProblem(timezone);
  if (problem) {
    ctx.addIssue({ code: "custom", message: problem.replace(/^Invalid /, ""), params: WHOLE_PHRASE });
  }
});

const PreviewRun = z.object({
  at: z.string().openapi({ format: "date-time", description: "The planned run in UTC" }),
  local: z.string().openapi({
    description: "The same instant on the zone's wall clock, ISO 8601 with its offset then",
    example: "2027-03-01T09:00:00+01:00",
  }),
}).openapi("PreviewRun");

const SchedulePreview = z.object({
  cron: z.string(),
  timezone: z.string().openapi({ description: "The zone as a schedule keeps it (its IANA spelling)" }),
  runs: z.array(PreviewRun).openapi({
    description: `The next ${PREVIEW_RUNS} runs after now, oldest first; fewer when the schedule ends sooner`,
  }),
}).openapi("SchedulePreview");

const previewRoute = billedRoute({
  method: "get",
  path: "/schedule-preview",
  operationId: "previewSchedule",
  summary: `The next ${PREVIEW_RUNS} runs of a schedule, planned as the scheduler plans them`,
  description: "The cron and zone are checked as `schedule` of POST /webhook is, with the same `400` " +
    "phrases (a schedule that never fires again included). " + FREE_NOTE,
  middleware: [requireWallet, billing(VIEWS)] as const,
  request: { query: PreviewQuery },
  responses: {
    200: { ...jsonOk("The next runs", SchedulePreview)[200], headers: BILLING_HEADERS },
    ...FREE_VIEW_ERRORS,
    400: errorResponseDoc("`Invalid schedule.cron ...` or `Invalid schedule.timezone ...`, as POST /webhook"),
  },
});

export function schedulePreviewRoutes(app: OpenAPIHono<AppEnv>) {
  serve(app, previewRoute, (c) => {
    const { cron, timezone } = c.req.valid("query");
    return billed(c, scheduleCalls.preview({ walletId: c.get("walletId")!, cron, timezone }));
  });
}
