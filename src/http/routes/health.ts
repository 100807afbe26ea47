// GET /healthz (the process is up) and GET /readyz (the database answers within
// DATABASE_TIMEOUT_MS); free, no token.
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../env.ts";
import { errorResponse } from "../errors.ts";
import { errorResponseDoc, publicRoute, RETRY_AFTER_HEADER, serve, textOk } from "../openapi.ts";
import { withDeadline } from "../../db/deadline.ts";
import { RETRY_AFTER_SECONDS } from "../unavailable.ts";
import { isMultiHost, standbyDetail } from "../../db/standby_watch.ts";

const healthz = publicRoute({
  method: "get",
  path: "/healthz",
  operationId: "getLiveness",
  summary: "Liveness",
  responses: textOk("`OK`"),
});

const readyz = publicRoute({
  method: "get",
  path: "/readyz",
  operationId: "getReadiness",
  summary: "Readiness: the database is reachable",
  responses: {
    ...textOk("`OK`"),
    503: { ...errorResponseDoc("`Database unreachable`"), headers: RETRY_AFTER_HEADER },
  },
});

export function healthRoutes(app: OpenAPIHono<AppEnv>) {
  serve(app, healthz, (c) => c.text("OK", 200));
  serve(app, readyz, async (c) => {
    const { sql, config } = c.get("services");
    try {
      // Bounded: a database that does not answer in time is not ready either.
      if (!isMultiHost(config.databaseUrl)) {
        await withDeadline(Promise.resolve(sql`select 1`), config.databaseTimeoutMs, "unchanged");
        return c.text("OK", 200);
      }
      // A highly available layout: also whether commits still wait for a standby (standby_watch.ts).
      const detail = await withDeadline(standbyDetail(sql), config.databaseTimeoutMs, "unchanged");
      return c.text(detail ? `OK (${detail})` : "OK", 200);
    } catch {
      return errorResponse(c, 503, "Database unreachable", { "retry-after": String(RETRY_AFTER_SECONDS) });
    }
  });
}
