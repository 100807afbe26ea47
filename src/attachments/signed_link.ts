// Signed download links (CONTRACT sections 6 and 9): `/attachments/<owner>/<id>?expires=<unix>&sig=`
// where `sig` is the base64url HMAC-SHA256 of owner, id and expiry under the server secret. A link is
// valid for 1 hour from the delivery attempt that hands it out.
import { hmacSha256Now, timingSafeEqual } from "../hmac.ts";

export const DOWNLOAD_LINK_TTL_MS = 3600 * 1000;

/** An attachment as a payload lists it: its signed link, valid until downloadUrlExpiresAt. */
export interface AttachmentLink {
  filename: string;
  size: number;
  contentType: string;
  downloadUrl: string;
  downloadUrlExpiresAt: string;
}

/** What a payload knows about an attachment before its link is signed. */
export interface AttachmentRef {
  /** The wallet id, or SERVICE_OWNER for the service's own files. */
  owner: string;
  id: string;
  filename: string;
  size: number;
  contentType: string;
}

export interface LinkParts {
  owner: string;
  id: string;
  expires: string | undefined;
  sig: string | undefined;
}

export type LinkCheck = "valid" | "expired" | "invalid";

/** A link to `ref` valid for an hour from `now`, in the payload's attachment shape. */
export function signedAttachmentLink(
  secret: string,
  { publicUrl, ref, now }: { publicUrl: string; ref: AttachmentRef; now: Date },
): AttachmentLink {
  const expiresAt = new Date(now.getTime() + DOWNLOAD_LINK_TTL_MS);
  const expires = String(Math.floor(expiresAt.getTime() / 1000));
  const sig = linkSignature(secret, ref.owner, ref.id, expires);
  const path = `/attachments/${encodeURIComponent(ref.owner)}/${encodeURIComponent(ref.id)}`;
  return {
    filename: ref.filename,
    size: ref.size,
    contentType: ref.contentType,
    downloadUrl: `${publicUrl}${path}?expires=${expires}&sig=${sig}`,
    downloadUrlExpiresAt: new Date(Number(expires) * 1000).toISOString(),
  };
}

/** Checks the signature first, then the expiry, so a forger learns nothing about time. */
export function checkAttachmentLink(secret: string, link: LinkParts, now: Date): LinkCheck {
  const { expires, sig } = link;
  if (expires === undefined || sig === undefined || !/^\d{1,12}$/.test(expires)) return "invalid";
  const expected = linkSignature(secret, link.owner, link.id, expires);
  if (!timingSafeEqual(sig, expected)) return "invalid";
  return Number(expires) * 1000 > now.getTime() ? "valid" : "expired";
}

function linkSignature(secret: string, owner: string, id: string, expires: string): string {
  // Length-prefixed parts: no choice of owner and id can make two different links sign alike.
  const signed = `attachment-link-v1\n${owner.length}:${owner}\n${id.length}:${id}\n${expires}`;
  const mac = hmacSha256Now(secret, signed);
  return btoa(String.fromCharCode(...mac)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}
