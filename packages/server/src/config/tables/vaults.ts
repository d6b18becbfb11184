/** Vault secrets: keys they were sealed with before the current one (rotation). Fields of `Config.environments`. */
import { table, value } from "../option.js";
import { text } from "../schemas.js";

export const vaults = table("environments", {
  /** Keys sealing was done with before the current one (rotation): they still open, never seal. */
  previousSecretKeys: value({
    env: "AGENT_SECRET_KEYS_PREVIOUS",
    schema: text,
    default: null,
    blank: "unset",
  }),
  previousSecretKeysFile: value({
    flag: "secret-keys-previous-file",
    arg: "<file>",
    env: "AGENT_SECRET_KEYS_PREVIOUS_FILE",
    schema: text,
    default: null,
    blank: "unset",
    path: true,
    help: [
      "keys secrets were sealed with before the current one, one per line: they still open",
      "and are re-sealed with the current key at start-up (AGENT_SECRET_KEYS_PREVIOUS_FILE;",
      "or AGENT_SECRET_KEYS_PREVIOUS holding them, comma-separated)",
    ],
  }),
});
