// One signed POST of a payload (CONTRACT section 8): the body (rendered by delivery_body.ts), its custom
// headers, the User-Agent and Standard Webhooks signature headers. Shared by the delivery worker,
// the test endpoint and alerts, so a test looks exactly like a real delivery.
import { SERVICE_NAME, SERVICE_VERSION } from "../service_info.ts";
import { postJson } from "./http_post.ts";
import { signatureHeaders } from "./signature.ts";
import type { LinkSigning } from "./delivery_body.ts";
import type { Config } from "../config.ts";
import type { Sql } from "../db/connect.ts";
import { serverSecretFor } from "../server_secret.ts";
import type { AttemptResult } from "./delivery_channel.ts";

// Where the alert channel and the delivery channels have always found it.
export type { LinkSigning } from "./delivery_body.ts";

export const USER_AGENT = `${SERVICE_NAME}/${SERVICE_VERSION}`;
export const DELIVERY_TIMEOUT_MS = 10_000;

/** How the service signs links: the server secret (generated once when not configured) and PUBLIC_URL. */
export async function linkSigning(sql: Sql, config: Config): Promise<LinkSigning> {
  return { serverSecret: await serverSecretFor(sql, config.serverSecret), publicUrl: config.publicUrl };
}

/** Where a signed POST goes: the URL, the custom headers and the signing key. */
export interface HttpTarget {
  url: string;
  headers: Record<string, string>;
  /** `whsec_` + base64. */
  secret: string;
}

export interface PostOptions {
  /** The `webhook-id` header: the same on every attempt of one delivery. */
  messageId: string;
  now: Date;
  allowPrivate: boolean;
}

/** One signed POST; never throws (postJson classifies every failure). */
export async function signedPost(
  target: HttpTarget,
  body: string,
  options: PostOptions,
): Promise<AttemptResult> {
  const signature = await signatureHeaders(target.secret, {
    messageId: options.messageId,
    timestamp: options.now,
    body,
  });
  return await postJson(target.url, body, {
    headers: { ...target.headers, "User-Agent": USER_AGENT, ...signature },
    timeoutMs: DELIVERY_TIMEOUT_MS,
    allowPrivate: options.allowPrivate,
  });
}
