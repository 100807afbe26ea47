// GET and POST /alerts/confirm: the link mailed to a new alert email address (issue 23). Free and
// without a token: whoever reads the mail holds the link. GET only shows a page whose button POSTs,
// so mail scanners that open every link confirm nothing; POST confirms.
import { type OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../env.ts";
import { errorResponse } from "../errors.ts";
import { errorResponseDoc, publicRoute, serve, textOk } from "../openapi.ts";
import { findWalletSettings } from "../../../projections/wallet_settings.ts";
import { serverSecretFor } from "../../server_secret.ts";
import {
  CONFIRM_PATH,
  confirmEmailCommand,
  presentedLink,
  TOKEN_PATTERN,
  WALLET_PATTERN,
} from "../../alerts/email_confirmation.ts";

const LinkQuery = z.object({
  wallet: z.string().regex(WALLET_PATTERN, "must be 64 lowercase hexadecimal digits").openapi({
    description: "The wallet's hash",
    example: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
  }),
  token: z.string().regex(TOKEN_PATTERN, "must be 43 base64url characters").openapi({
    description: "The link's token",
    example: "n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCgg",
  }),
});

const NOT_FOUND = "Confirmation link not found or expired";

const showConfirmation = publicRoute({
  method: "get",
  path: CONFIRM_PATH,
  operationId: "showAlertEmailConfirmation",
  summary: "The page of an alert email confirmation link: a button that confirms (changes nothing itself)",
  request: { query: LinkQuery },
  responses: {
    200: { description: "An HTML page with the form", content: { "text/html": { schema: z.string() } } },
    400: errorResponseDoc("A malformed link: a phrase naming the parameter and the rule"),
  },
});

const confirm = publicRoute({
  method: "post",
  path: CONFIRM_PATH,
  operationId: "confirmAlertEmail",
  summary: "Confirm an alert email address: alerts go to it from now on",
  request: { query: LinkQuery },
  responses: {
    ...textOk("`Confirmed: alerts go to <address>` or `Already confirmed`"),
    400: errorResponseDoc("A malformed link: a phrase naming the parameter and the rule"),
    404: errorResponseDoc(
      `\`${NOT_FOUND}\`: a wrong token, a link older than 48 hours, or one voided by a change of address ` +
        "or a newer link",
    ),
  },
});

/** The answers carry the token in their address: no caching, no referrer, nothing but the form. */
const PAGE_HEADERS = {
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "content-security-policy": "default-src 'none'; form-action 'self'",
  "x-content-type-options": "nosniff",
};

function page(wallet: string, token: string): string {
  // wallet and token matched their patterns: nothing in them needs escaping.
  const action = `${CONFIRM_PATH}?wallet=${wallet}&token=${token}`;
  return `<!doctype html><html><head><meta charset="utf-8"><title>Confirm alert email</title></head>` +
    `<body><p>Send this wallet's alerts to your email address?</p>` +
    `<form method="post" action="${action}"><button type="submit">Confirm</button></form></body></html>`;
}

export function alertConfirmationRoutes(app: OpenAPIHono<AppEnv>) {
  serve(app, showConfirmation, (c) => {
    const { wallet, token } = c.req.valid("query");
    return new Response(page(wallet, token), {
      headers: { ...PAGE_HEADERS, "content-type": "text/html; charset=utf-8" },
    });
  });

  serve(app, confirm, async (c) => {
    const { wallet, token } = c.req.valid("query");
    const { sql, config, clock, ledger } = c.get("services");
    const secret = await serverSecretFor(sql, config.serverSecret);
    const settings = await findWalletSettings(sql, wallet);
    const link = await presentedLink(secret, {
      presented: { walletId: wallet, token },
      settings,
      now: clock.now(),
    });
    if (link === undefined) return errorResponse(c, 404, NOT_FOUND, PAGE_HEADERS);
    if (link !== "already confirmed") {
      // Decided again under the wallet's lock: a change of address since the read voids the link.
      const outcome = await ledger.appendUnbilled(confirmEmailCommand(wallet, link));
      if (outcome === "invalid") return errorResponse(c, 404, NOT_FOUND, PAGE_HEADERS);
      if (outcome === "confirmed") {
        return new Response(`Confirmed: alerts go to ${link.email}`, {
          headers: { ...PAGE_HEADERS, "content-type": "text/plain; charset=utf-8" },
        });
      }
    }
    return new Response("Already confirmed", {
      headers: { ...PAGE_HEADERS, "content-type": "text/plain; charset=utf-8" },
    });
  });
}
