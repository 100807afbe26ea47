// GET /attachments/{owner}/{id}?expires=&sig=: the file behind a signed download link (CONTRACT
// sections 6 and 9). Free and without a token: the signature is the permission, for 1 hour.
import { type OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../env.ts";
import { errorResponse } from "../errors.ts";
import { ERROR_RESPONSES, errorResponseDoc, publicRoute, serve } from "../openapi.ts";
import { checkAttachmentLink } from "../../attachments/signed_link.ts";
import { readAttachment } from "../../attachments/store.ts";
import { serverSecretFor } from "../../server_secret.ts";

const Name = (name: string) => z.string().min(1).max(128).openapi({ param: { name, in: "path" } });

const download = publicRoute({
  method: "get",
  path: "/attachments/{owner}/{id}",
  operationId: "downloadAttachment",
  summary: "Download an attachment through a signed link",
  description: "Links are handed out in webhook payloads and expire 1 hour after the delivery attempt.",
  request: {
    params: z.object({ owner: Name("owner"), id: Name("id") }),
    // Missing or malformed parts are a bad link (403), not a bad request.
    query: z.object({ expires: z.string().optional(), sig: z.string().optional() }),
  },
  responses: {
    200: { description: "The file", content: { "application/octet-stream": { schema: z.string() } } },
    400: ERROR_RESPONSES[400],
    403: errorResponseDoc("`Invalid download link` or `Download link expired`"),
    404: errorResponseDoc("`Attachment not found`"),
  },
});

export function attachmentRoutes(app: OpenAPIHono<AppEnv>) {
  serve(app, download, async (c) => {
    const { owner, id } = c.req.valid("param");
    const { expires, sig } = c.req.valid("query");
    const { sql, config, clock } = c.get("services");
    const now = clock.now();
    const secret = await serverSecretFor(sql, config.serverSecret);
    const check = checkAttachmentLink(secret, { owner, id, expires, sig }, now);
    if (check === "invalid") return errorResponse(c, 403, "Invalid download link");
    if (check === "expired") return errorResponse(c, 403, "Download link expired");
    const file = await readAttachment(sql, { walletId: owner, id, now });
    if (!file) return errorResponse(c, 404, "Attachment not found");
    return new Response(file.content as Uint8Array<ArrayBuffer>, {
      headers: {
        "content-type": file.contentType,
        "content-length": String(file.content.byteLength),
        "content-disposition": contentDisposition(file.filename),
        // The bytes come from strangers' emails: never render them as a page of this origin.
        "x-content-type-options": "nosniff",
        "content-security-policy": "default-src 'none'; sandbox",
        "cache-control": "private, no-store",
      },
    });
  });
}

/** `attachment` with an ASCII fallback name and the exact UTF-8 name (RFC 6266, RFC 8187). */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, "_").trim() || "attachment";
  const exact = encodeURIComponent(filename).replace(
    /['()*]/g,
    (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${ascii}"; filename*=UTF-8''${exact}`;
}
