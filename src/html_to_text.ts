// The one conversion of an email's HTML into readable text: for the email's own text body when it
// has none (as Mailgun's body-plain does) and for the chat formats. Script, style and head contents
// never reach the text; headings keep the author's case; lines are never hard-wrapped.

import { convert } from "html-to-text";

export interface HtmlToTextOptions {
  /**
   * For a chat message: images are dropped (mostly tracking pixels and logos, whose URLs are noise
   * there) and a link whose text is its URL shows it once. Without it, images read as `alt [src]`
   * and links as `text [href]`, as in a mail client's text view.
   */
  forChat?: boolean;
}

/** Input cap: the email's bodies are cut to 1 MiB before they get here. */
export const MAX_HTML_INPUT_CHARS = 1024 * 1024;
/** Recursion depth, so deeply nested HTML cannot overflow the stack. */
export const MAX_HTML_DEPTH = 256;

// Headings keep the author's case instead of html-to-text's default upper case.
const HEADINGS = ["h1", "h2", "h3", "h4", "h5", "h6"].map((selector) => ({
  selector,
  options: { uppercase: false },
}));

const CHAT_SELECTORS = [
  { selector: "img", format: "skip" },
  { selector: "a", options: { hideLinkHrefIfSameAsText: true } },
];

/** The text of `html`; "" for a document html-to-text cannot walk (its html is still there). */
export function htmlToText(html: string, options: HtmlToTextOptions = {}): string {
  try {
    return convert(html, {
      // Mail views and chat targets wrap lines themselves: hard wraps at 80 columns show as ragged lines.
      wordwrap: false,
      limits: { maxInputLength: MAX_HTML_INPUT_CHARS, maxDepth: MAX_HTML_DEPTH },
      selectors: options.forChat ? [...CHAT_SELECTORS, ...HEADINGS] : HEADINGS,
    });
  } catch {
    return "";
  }
}
