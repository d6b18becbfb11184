/**
 * The write-only parts of environments and templates, sealed at rest with the service's key ring, each under a
 * context naming its record: an environment's variable values and setup commands; a template's variables, setup
 * commands and inline file contents. Nothing to seal is stored as null.
 */
import type { EnvironmentRecord, EnvironmentTemplateRecord } from "../../store/types.js";
import { type Keyring, sealedContext } from "../vaults/service.js";
import type { EnvironmentSpec, SetupCommand, TemplateSecrets } from "./spec.js";

/** The sealed write-only parts of an environment. */
export interface EnvironmentSecrets {
  env: Record<string, string>;
  setup_commands: SetupCommand[];
}

export class EnvironmentSealing {
  constructor(private readonly keyring: Keyring) {}

  seal(id: string, spec: EnvironmentSpec): string | null {
    const s: EnvironmentSecrets = { env: spec.env, setup_commands: spec.setup_commands };
    if (Object.keys(s.env).length === 0 && s.setup_commands.length === 0) return null;
    return this.keyring.seal(JSON.stringify(s), sealedContext("environment", id));
  }

  open(env: EnvironmentRecord): EnvironmentSecrets {
    if (!env.secrets) return { env: {}, setup_commands: [] };
    return JSON.parse(
      this.keyring.open(env.secrets, sealedContext("environment", env.id)),
    ) as EnvironmentSecrets;
  }

  sealTemplate(id: string, s: TemplateSecrets): string | null {
    if (!s.env && !s.setup_commands && !s.files) return null;
    return this.keyring.seal(JSON.stringify(s), sealedContext("environment_template", id));
  }

  openTemplate(t: EnvironmentTemplateRecord): TemplateSecrets | null {
    if (!t.secrets) return null;
    return JSON.parse(
      this.keyring.open(t.secrets, sealedContext("environment_template", t.id)),
    ) as TemplateSecrets;
  }
}
