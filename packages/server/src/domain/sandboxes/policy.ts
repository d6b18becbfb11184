/**
 * What a session's sandbox may reach: its environment's network policy (`disabled` when it has none — the official
 * default). `restricted` is enforced by the egress proxy's allowlist (exact host names). No secret is held by the
 * proxy yet: vault credentials reach a sandboxed thread as they reach a local one (domain/environments/engines.ts).
 */
import { NO_SECRETS, type SandboxNetwork } from "../../platform/sandbox/sandboxes.js";
import type { SessionRecord, Store } from "../../store/types.js";
import type { SandboxPolicy } from "./engines.js";

const DISABLED: SandboxNetwork = { access: "disabled" };

export async function sandboxPolicyOf(store: Store, session: SessionRecord): Promise<SandboxPolicy> {
  const id = session.extra.environment_id;
  const env = typeof id === "string" ? await store.getEnvironment(id) : undefined;
  return { network: env ? networkOf(env.config.network) : DISABLED, secrets: NO_SECRETS };
}

export function networkOf(n: { access: string; allowed_domains: string[] }): SandboxNetwork {
  switch (n.access) {
    case "enabled":
      return { access: "enabled" };
    case "restricted":
      return { access: "restricted", allowed: [...n.allowed_domains], blocked: [] };
    default:
      return DISABLED;
  }
}
