// One builder per billed call of the low-balance settings (GET and PUT /token/settings): its price,
// its read of the wallet's settings and its decision, for the wallet token only. The REST routes
// (http/routes/settings.ts) make their calls here.
import { read } from "../ledger/reads.ts";
import { walletSettingsRead } from "../../projections/wallet_settings.ts";
import { billedCall } from "../calls/billed_call.ts";
import { SETTINGS } from "../calls/prices.ts";
import { type ChangeIds, changeSettings, type SettingsChange, settingsView } from "./settings.ts";

const settingsOf = (walletId: string) => ({ settings: read(walletSettingsRead, walletId) });

export const settingsCalls = {
  /** GET /token/settings: the settings with their credentials redacted. */
  get({ walletId }: { walletId: string }) {
    return billedCall({
      price: SETTINGS.price,
      reads: settingsOf(walletId),
      decide: ({ reads }) => settingsView(reads.settings),
    });
  },

  /** PUT /token/settings: the new settings, with ids drawn before the call. */
  change({ walletId, change, ids }: { walletId: string; change: SettingsChange; ids: ChangeIds }) {
    return billedCall({
      price: SETTINGS.price,
      reads: settingsOf(walletId),
      decide: ({ reads, now }) => changeSettings(change, reads.settings, { walletId, now, ids }),
    });
  },
};
