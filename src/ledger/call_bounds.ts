// What one CallBilled keeps of a call, whatever the caller sent: the path as sent, its query cut
// first, and the error text, both bounded and storable. The permanent log grows by a bounded number
// of bytes per call (README, "Tenant isolation").
import { cutUtf8 } from "../text_bounds.ts";
import { boundedErrorText, isStorable } from "../storable_text.ts";

/** Bytes of the path before "?" that a CallBilled keeps; a cut ends with "…". */
export const MAX_LOGGED_PATH_BYTES = 400;
/** Bytes of the query string after "?" that a CallBilled keeps; a cut ends with "…". */
export const MAX_LOGGED_QUERY_BYTES = 100;

/** The path and query as the call log keeps them: each cut to its bound, never broken mid-character. */
export function loggedCallPath(sent: string): string {
  const text = isStorable(sent) ? sent : sent.toWellFormed().replaceAll("\u0000", "\ufffd");
  const mark = text.indexOf("?");
  const path = mark < 0 ? text : text.slice(0, mark);
  const query = mark < 0 ? undefined : text.slice(mark + 1);
  const cut = (part: string, maxBytes: number) => {
    const kept = cutUtf8(part, maxBytes);
    return kept.cut ? `${kept.text}…` : kept.text;
  };
  return query === undefined
    ? cut(path, MAX_LOGGED_PATH_BYTES)
    : `${cut(path, MAX_LOGGED_PATH_BYTES)}?${cut(query, MAX_LOGGED_QUERY_BYTES)}`;
}

/** The error text a CallBilled keeps. */
export function loggedCallError(error: string): string {
  return boundedErrorText(error);
}
