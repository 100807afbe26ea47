// A local SMTP relay for tests of alert emails (SMTP_RELAY_URL): records every mail it is given.
import { SMTPServer } from "smtp-server";
import { freePort } from "./service.ts";

export interface RelayedMail {
  to: string[];
  raw: string;
}

export async function startRelay(): Promise<{ url: string; mails: RelayedMail[]; close(): Promise<void> }> {
  const mails: RelayedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onData(stream, session, done) {
      let raw = "";
      stream.on("data", (chunk: Uint8Array) => raw += new TextDecoder().decode(chunk));
      stream.on("end", () => {
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), raw });
        done();
      });
    },
  });
  const port = freePort();
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", () => resolve()));
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The text of a relayed mail with quoted-printable soft line breaks removed. */
export function mailText(mail: RelayedMail): string {
  return mail.raw.replace(/=\r?\n/g, "");
}

/** The text of a relayed mail, quoted-printable decoded (enough for the service's ASCII mails). */
export function decodedText(mail: RelayedMail): string {
  return mailText(mail).replace(/=([0-9A-F]{2})/g, (_, hex) => String.fromCharCode(parseInt(hex, 16)));
}

/**
 * The path and query of the alert email confirmation link last mailed to `to`, once it arrived
 * (`after`: how many such mails to `to` came before it).
 */
export async function confirmationLinkTo(
  relay: { mails: RelayedMail[] },
  to: string,
  after = 0,
): Promise<string> {
  const deadline = performance.now() + 15_000;
  while (performance.now() < deadline) {
    const links = relay.mails.filter((mail) => mail.to.includes(to))
      .map((mail) => decodedText(mail).match(/https?:\/\/[^/\s]+(\/alerts\/confirm\?\S+)/)?.[1])
      .filter((link) => link !== undefined);
    if (links.length > after) return links[links.length - 1]!;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`Timed out waiting for a confirmation link to ${to}`);
}
