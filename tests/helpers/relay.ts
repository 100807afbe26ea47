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
