// GET / (the dashboard page) and GET /dashboard/{file} (its style, its scripts and the openapi-fetch
// runtime, read from node_modules when first asked for): free, no token, and a Content-Security-Policy
// that lets the page load nothing from anywhere but this service.
import "openapi-fetch"; // Makes Deno install the package; its browser build is served below.
import { type OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../env.ts";
import { errorResponse } from "../errors.ts";
import { errorResponseDoc, publicRoute, serve } from "../openapi.ts";
import { cachedPromise } from "../../promise_cache.ts";

const DASHBOARD_DIR = new URL("../dashboard/", import.meta.url);
const OPENAPI_FETCH = "openapi-fetch.js";

export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const JS = "text/javascript; charset=utf-8";
/** Every file the page loads, by name, with its type; nothing else under /dashboard/ is served. */
const FILES: Record<string, string> = {
  "index.html": "text/html; charset=utf-8",
  "dashboard.css": "text/css; charset=utf-8",
  "panels.css": "text/css; charset=utf-8",
  "icon.svg": "image/svg+xml",
  "main.js": JS,
  "api.js": JS,
  "view.js": JS,
  "chart.js": JS,
  "usage.js": JS,
  "ledger.js": JS,
  "logs.js": JS,
  "webhooks.js": JS,
  "deliveries.js": JS,
  "settings.js": JS,
  "prices.js": JS,
  "token_new.js": JS,
  "ttl.js": JS,
  "kv_keys.js": JS,
  "kv_entry.js": JS,
  "kv_buckets.js": JS,
  "webhook_actions.js": JS,
  "webhook_form.js": JS,
  "keys.js": JS,
  "schedule_preview.js": JS,
  [OPENAPI_FETCH]: JS,
};

async function readFile(name: string): Promise<string> {
  if (name !== OPENAPI_FETCH) return await Deno.readTextFile(new URL(name, DASHBOARD_DIR));
  const source = await Deno.readTextFile(new URL(import.meta.resolve("openapi-fetch")));
  // Its source map is not served: the browser would ask for it.
  return source.replace(/\n\/\/# sourceMappingURL=.*\s*$/, "\n");
}

/** Read once, on first use, and kept: the files are part of the release. */
const cache = new Map<string, Promise<string>>();
function fileText(name: string): Promise<string> {
  return cachedPromise(cache, name, () => readFile(name));
}

async function fileResponse(name: string): Promise<Response> {
  return new Response(await fileText(name), {
    headers: {
      "content-type": FILES[name],
      "content-security-policy": DASHBOARD_CSP,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      "cache-control": "no-cache",
    },
  });
}

const page = publicRoute({
  method: "get",
  path: "/",
  operationId: "getDashboard",
  summary: "The dashboard: balance, usage, ledger, call logs, webhooks and alert settings",
  description: "A page for people; paste a token. Free, no token needed to load it.",
  responses: { 200: { description: "The page", content: { "text/html": { schema: z.string() } } } },
});

const asset = publicRoute({
  method: "get",
  path: "/dashboard/{file}",
  operationId: "getDashboardFile",
  summary: "A file of the dashboard page",
  request: {
    params: z.object({
      file: z.string().openapi({
        description: "A style sheet, script or image the page names",
        example: "main.js",
      }),
    }),
  },
  responses: {
    200: {
      description: "The file",
      content: {
        "text/css": { schema: z.string() },
        "text/javascript": { schema: z.string() },
        "image/svg+xml": { schema: z.string() },
      },
    },
    404: errorResponseDoc("`Not Found`"),
  },
});

export function dashboardRoutes(app: OpenAPIHono<AppEnv>) {
  serve(app, page, () => fileResponse("index.html"));
  serve(app, asset, (c) => {
    const { file } = c.req.valid("param");
    if (!Object.hasOwn(FILES, file) || file === "index.html") return errorResponse(c, 404, "Not Found");
    return fileResponse(file);
  });
}
