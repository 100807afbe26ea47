// The random values a webhook may need when it is created or becomes a mailbox: its mailbox address
// and its signing key. Drawn before the command, so its decision stays pure.
import { randomLowerId } from "../../ids.ts";
import { newWebhookSecret } from "../signature.ts";
import type { FreshIdentity } from "./config.ts";

/** Random characters of a mailbox name: `r_` + 24 of [a-z0-9], about 124 bits. */
export const MAILBOX_RANDOM_CHARS = 24;

export function newWebhookIdentity(mailDomain: string): FreshIdentity {
  return {
    mailboxAddress: `r_${randomLowerId(MAILBOX_RANDOM_CHARS)}@${mailDomain}`,
    secret: newWebhookSecret(),
  };
}
