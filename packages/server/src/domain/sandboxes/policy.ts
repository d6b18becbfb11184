/**
 * What a session's sandbox may reach: its environment's network policy (`disabled` when it has none — the official
 * default). `restricted` is enforced by the egress proxy's allowlist (exact host names). (The secrets its proxy
 * holds are its vault credentials' placeholders: domain/sandboxes/secrets.ts.)
 */
import type { SandboxNetwork } from "../../platform/sandbox/sandboxes.js";
import type { SessionRecord, Store } from "../../store/types.js";

const DISABLED: SandboxNetwork = { access: "disabled" };

export async function sandboxNetworkOf(store: Store, session: SessionRecord): Promise<SandboxNetwork> {
  const id = session.extra.environment_id;
  const env = typeof id === "string" ? await store.getEnvironment(id) : undefined;
  return env ? networkOf(env.config.network) : DISABLED;
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
