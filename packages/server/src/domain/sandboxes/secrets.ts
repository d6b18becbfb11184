/**
 * Secrets of a sandboxed session's commands (the container backend): an `environment_variable` credential's value
 * never enters the container. Its variable holds a placeholder (`placeholderFor`: stable per credential, derived from
 * no secret), and the sandbox's egress endpoint replaces the placeholder by the value in requests it lets out to the
 * credential's hosts (`networking.limited.allowed_hosts`; `unrestricted`: every host the network policy allows).
 * Elsewhere the placeholder goes out as it is. With the network disabled there is no endpoint: it reaches nothing.
 */
import { placeholderFor } from "@codex-agent-api/egress";
import type { SecretSubstitution } from "../../platform/engine/types.js";
import type { EnvCredential } from "../vaults/service.js";

export interface PlaceheldSecrets {
  /** What the commands get: each variable's placeholder. */
  env: Record<string, string>;
  /** What the sandbox's endpoint replaces. */
  substitutions: SecretSubstitution[];
}

export function placeheld(credentials: readonly EnvCredential[]): PlaceheldSecrets {
  const env: Record<string, string> = {};
  const substitutions: SecretSubstitution[] = [];
  for (const c of credentials) {
    const placeholder = placeholderFor(c.name, c.credentialId);
    env[c.name] = placeholder;
    if (c.value !== "") substitutions.push({ placeholder, value: c.value, hosts: c.hosts });
  }
  return { env, substitutions };
}
