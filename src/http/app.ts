// The HTTP API: Hono with routes declared through zod-openapi, so the schemas that validate
// requests are the ones /openapi.json describes.
import { OpenAPIHono } from "@hono/zod-openapi";
import { HTTPException } from "hono/http-exception";
import { LedgerBusyError } from "../ledger/ledger.ts";
import { CallerThrottledError } from "../ledger/fault_throttle.ts";
import type { AppEnv } from "./env.ts";
import type { Services } from "../calls/services.ts";
import { errorResponse, HttpError } from "./errors.ts";
import { requestEnvelope } from "./middleware.ts";
import { refusalPacer } from "./refusal_pacing.ts";
import { billedFailure } from "./billing.ts";
import { validatorPhrase } from "../parsed.ts";
import { methodNotAllowed } from "./method_not_allowed.ts";
import { refuseOversizedBody } from "./body.ts";
import { strictPath } from "./strict_path.ts";
import { InputRefused } from "./input_refused.ts";
import { answerRefused } from "./answer_refused.ts";
import { unavailableResponse } from "./unavailable.ts";
import { registerSharedComponents, withRequiredBodies } from "./openapi.ts";
import { healthRoutes } from "./routes/health.ts";
import { tokenRoutes } from "./routes/token.ts";
import { kvRoutes } from "./routes/kv.ts";
import { webhookRoutes } from "./routes/webhooks.ts";
import { schedulePreviewRoutes } from "./routes/schedule_preview.ts";
import { deliveryRoutes } from "./routes/deliveries.ts";
import { attachmentRoutes } from "./routes/attachments.ts";
import { paymentRoutes } from "./routes/payments.ts";
import { settingsRoutes } from "./routes/settings.ts";
import { alertConfirmationRoutes } from "./routes/alert_confirmation.ts";
import { keyRoutes } from "./routes/keys.ts";
import { mcpRoutes } from "./routes/mcp.ts";
import { usageRoutes } from "./routes/usage.ts";
import { dashboardRoutes } from "./routes/dashboard.ts";

import { SERVICE_VERSION } from "../service_info.ts";
import { log } from "../log.ts";
export { SERVICE_NAME, SERVICE_VERSION } from "../service_info.ts";

export type RouteInstaller = (app: OpenAPIHono<AppEnv>) => void;

export function createApp(services: Services, extraRoutes: RouteInstaller[] = []): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>({
    // Bad input after authentication is a billed 400 at the route's price; before it, a plain 400.
    // Parameters the schema accepts are refused too when storage could not hold them.
    defaultHook: (result, c) => {
      const phrase = validatorPhrase(result);
      if (phrase === undefined) return;
      if (c.get("walletId")) return billedFailure(c, 400, phrase);
      return errorResponse(c, 400, phrase);
    },
  });

  app.use(
    "*",
    requestEnvelope(services, { logRequests: services.config.logRequests, paceRefusal: refusalPacer() }),
  );
  app.use("*", refuseOversizedBody);
  // Paths with parameters are where a broken escape would reach the data; they authenticate first.
  app.use("*", strictPath((path) => path.startsWith("/kv/") || path.startsWith("/webhook/")));

  healthRoutes(app);
  tokenRoutes(app);
  kvRoutes(app);
  webhookRoutes(app);
  deliveryRoutes(app);
  schedulePreviewRoutes(app);
  attachmentRoutes(app);
  paymentRoutes(app);
  settingsRoutes(app);
  alertConfirmationRoutes(app);
  keyRoutes(app);
  mcpRoutes(app);
  usageRoutes(app);
  dashboardRoutes(app);
  for (const install of extraRoutes) install(app);

  registerSharedComponents(app);
  const documentConfig = {
    openapi: "3.1.0",
    info: {
      title: "Credit-metered utility API",
      version: SERVICE_VERSION,
      description: "Key-value store, wallet tokens with credits, and webhooks. Authenticate with X-Token.",
    },
    servers: [{ url: services.config.publicUrl, description: "This service (PUBLIC_URL)" }],
  };
  app.get("/openapi.json", (c) => c.json(withRequiredBodies(app.getOpenAPI31Document(documentConfig))));

  app.notFound(methodNotAllowed(app.routes));
  app.onError((error, c) => {
    if (error instanceof HttpError) return errorResponse(c, error.status, error.message, error.headers);
    if (error instanceof InputRefused) return answerRefused(c, error);
    if (error instanceof HTTPException && error.status < 500) {
      return errorResponse(c, error.status, error.message);
    }
    if (error instanceof LedgerBusyError) {
      return errorResponse(c, 503, "Service busy, retry shortly", { "retry-after": "1" });
    }
    if (error instanceof CallerThrottledError) {
      return errorResponse(c, 429, error.message, { "retry-after": String(error.retryAfterSeconds) });
    }
    // The database is out: not a fault of ours, and the client can retry.
    const unavailable = unavailableResponse(c, error);
    if (unavailable) return unavailable;
    // The stack goes to the log, never to the client; a wallet whose calls keep faulting is slowed.
    log("error", "request failed", {
      requestId: c.get("requestId"),
      clientRequestId: c.get("clientRequestId"),
      error: String(error?.stack ?? error),
    });
    const walletId = c.get("walletId");
    if (walletId) services.ledger.recordFault(walletId);
    return errorResponse(c, 500, `Internal Server Error (request ${c.get("requestId")})`);
  });
  return app;
}
