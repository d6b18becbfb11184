/**
 * What a client asks of an environment this server prepares (`openai_hosted`), parsed strictly: files (inline
 * bytes or Files API references, at `/workspace/…` paths), packages, setup commands, variables and the network
 * policy. What this server cannot honour is refused with a 4xx that says so (never accepted and ignored): skills,
 * plugins, capability directories, a desktop, domain-restricted networks (the engine's sandbox has no proxy that
 * would enforce them) and, unless the operator installed a program for them, system packages. Templates merge
 * under the inline configuration by the documented rule: omitted fields inherit the template, and the network
 * cannot be broadened.
 */
import { z } from "zod";
import { badRequest } from "../../kernel/errors.js";
import type { RepositorySource } from "../../model/records.js";
import type {
  EnvironmentConfig,
  EnvironmentNetwork,
  EnvironmentPackages,
  EnvironmentTemplateConfig,
  TemplateFileInfo,
} from "../../store/types.js";
import { parseRepositories, RepositoriesParam } from "../repositories/spec.js";
import { unsupported, WORKSPACE_ROOT, workspaceDirectory, workspaceFilePath } from "./paths.js";

export { unsupported, WORKSPACE_ROOT, workspaceDirectory, workspaceFilePath };

const STD_BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** Variables the server sets itself (or that would break the sandbox): not a client's to set. */
const RESERVED_ENV = new Set(["HOME", "PATH", "SHLVL", "TMPDIR", "PWD", "NODE_PATH", "VIRTUAL_ENV"]);
/** Package specs: names, versions, tarballs or wheels in the workspace, URLs; never an option. */
const PACKAGE_SPEC = /^[^-\s][^\s]{0,499}$/;
/** Debian-style system package names (an operator's installer gets them as arguments). */
const SYSTEM_PACKAGE = /^[a-z0-9][a-z0-9+.-]{0,127}(=[A-Za-z0-9.+:~-]{1,64})?$/;

const FileParam = z.discriminatedUnion("type", [
  z.object({ type: z.literal("inline"), path: z.string(), data: z.string() }).strict(),
  z.object({ type: z.literal("file_id"), path: z.string(), file_id: z.string().min(1).max(256) }).strict(),
]);

const NetworkParam = z
  .object({
    access: z.enum(["enabled", "disabled", "restricted"]),
    allowed_domains: z.array(z.string()).max(256).nullable().optional(),
    blocked_domains: z.array(z.string()).max(256).nullable().optional(),
  })
  .strict();

const PackagesParam = z
  .object({
    npm: z.array(z.string()).max(100).nullable().optional(),
    python: z.array(z.string()).max(100).nullable().optional(),
    system: z.array(z.string()).max(100).nullable().optional(),
  })
  .strict();

const SetupCommandParam = z
  .object({ command: z.string().min(1).max(100_000), cwd: z.string().nullable().optional() })
  .strict();

/** The configurable fields shared by inline environments, environments.create and templates. */
const ConfigFields = {
  capability_directories: z.array(z.string()).nullable().optional(),
  desktop: z.object({ enabled: z.boolean() }).strict().nullable().optional(),
  env: z.record(z.string(), z.string()).nullable().optional(),
  files: z.array(FileParam).max(1000).nullable().optional(),
  network: NetworkParam.nullable().optional(),
  packages: PackagesParam.nullable().optional(),
  plugins: z.array(z.unknown()).nullable().optional(),
  /** This server's extension: repositories cloned into the workspace (domain/repositories/spec.ts). */
  repositories: RepositoriesParam.nullable().optional(),
  setup_commands: z.array(SetupCommandParam).max(100).nullable().optional(),
  skills: z.array(z.unknown()).nullable().optional(),
};

/** `environment: {type: "openai_hosted", …}` of a session or of environments.create. */
export const HostedEnvironmentParam = z
  .object({
    type: z.literal("openai_hosted"),
    ...ConfigFields,
    container_size: z.enum(["small", "medium", "large"]).optional(),
    environment_template_id: z.string().min(1).optional(),
    environment_id: z.string().min(1).optional(),
  })
  .strict();
export type HostedEnvironmentInput = z.infer<typeof HostedEnvironmentParam>;

export const TemplateParam = z
  .object({ ...ConfigFields, name: z.string().max(256).nullable().optional() })
  .strict();
export type TemplateInput = z.infer<typeof TemplateParam>;

/** Parses with a zod schema; the first issue is a 400 naming the field (under `where`). */
export function parseWith<T extends z.ZodType>(schema: T, value: unknown, where: string): z.infer<T> {
  const r = schema.safeParse(value ?? {});
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const path = [where, ...issue.path.map(String)].filter((p) => p !== "").join(".");
  throw badRequest(`Invalid '${path}': ${issue.message}`, path);
}

/** A file to write: its official path, where it goes in the workspace, and what it holds. */
export interface FileSpec {
  path: string;
  rel: string;
  source: FileSource;
}

/**
 * Inline bytes, or a Files API file of the project: `param` is the client's parameter that names it (null: it
 * comes from the environment's template); `resolved` is filled when the environment is planned (the file's size
 * and where its contents are, copied into the environment when it is prepared), null until then.
 */
export type FileSource =
  | { type: "inline"; data: Buffer }
  | {
      type: "file_id";
      file_id: string;
      param: string | null;
      resolved: { bytes: number; content: string } | null;
    };

/** The size of a file to write (a reference not resolved yet: 0). */
export const fileSize = (f: FileSpec): number =>
  f.source.type === "inline" ? f.source.data.length : (f.source.resolved?.bytes ?? 0);

export interface SetupCommand {
  command: string;
  /** Workspace-relative ("" = the workspace itself). */
  cwd: string;
}

/** One side of a merge (a template's or the inline configuration): null = not given. */
export interface PartialSpec {
  env: Record<string, string> | null;
  files: FileSpec[] | null;
  network: EnvironmentNetwork | null;
  packages: EnvironmentPackages | null;
  repositories: RepositorySource[] | null;
  setup_commands: SetupCommand[] | null;
}

/** What an environment gets, everything decided. */
export interface EnvironmentSpec {
  env: Record<string, string>;
  files: FileSpec[];
  network: EnvironmentNetwork;
  packages: EnvironmentPackages;
  repositories: RepositorySource[];
  setup_commands: SetupCommand[];
  environment_template_id: string | null;
}

function decodeBase64(data: string, where: string): Buffer {
  if (data.length % 4 !== 0 || !STD_BASE64.test(data)) {
    throw badRequest(`'${where}' must be standard base64 (with padding)`, where);
  }
  return Buffer.from(data, "base64");
}

function parseFiles(files: z.infer<typeof FileParam>[] | null | undefined, where: string): FileSpec[] | null {
  if (files === undefined || files === null) return null;
  const seen = new Set<string>();
  return files.map((f, i) => {
    const w = `${where}[${i}]`;
    const rel = workspaceFilePath(f.path, `${w}.path`);
    for (const other of seen) {
      if (other === rel || other.startsWith(`${rel}/`) || rel.startsWith(`${other}/`)) {
        throw badRequest(
          `'${w}.path' conflicts with another file of the environment: ${f.path}`,
          `${w}.path`,
        );
      }
    }
    seen.add(rel);
    const source: FileSource =
      f.type === "inline"
        ? { type: "inline", data: decodeBase64(f.data, `${w}.data`) }
        : { type: "file_id", file_id: f.file_id, param: `${w}.file_id`, resolved: null };
    return { path: f.path, rel, source };
  });
}

function parseEnv(
  env: Record<string, string> | null | undefined,
  where: string,
): Record<string, string> | null {
  if (env === undefined || env === null) return null;
  let size = 0;
  for (const [k, v] of Object.entries(env)) {
    if (!ENV_NAME.test(k)) {
      throw badRequest(
        `'${where}': variable names are letters, digits and '_', not starting with a digit`,
        where,
      );
    }
    if (RESERVED_ENV.has(k) || k.startsWith("CODEX_")) {
      throw badRequest(
        `'${where}': ${k} is set by the server (names starting with CODEX_ are reserved too)`,
        where,
      );
    }
    // (The value is never quoted back: it is write-only.)
    if (v.includes("\0")) throw badRequest(`'${where}.${k}': a value cannot contain NUL characters`, where);
    size += k.length + v.length;
  }
  if (size > 256 * 1024) throw badRequest(`'${where}': at most 256 KiB of variables`, where);
  return { ...env };
}

function parseNetwork(
  n: z.infer<typeof NetworkParam> | null | undefined,
  where: string,
): EnvironmentNetwork | null {
  if (n === undefined || n === null) return null;
  const allowed = n.allowed_domains ?? [];
  const blocked = n.blocked_domains ?? [];
  if (n.access !== "restricted" && (allowed.length > 0 || blocked.length > 0)) {
    throw badRequest(
      `'${where}': allowed_domains and blocked_domains apply to access 'restricted' only`,
      `${where}.access`,
    );
  }
  if (allowed.length > 0 && blocked.length > 0) {
    throw badRequest(`'${where}': allowed_domains and blocked_domains cannot both be given`, where);
  }
  return { access: n.access, allowed_domains: allowed.map((d) => d.toLowerCase()) };
}

function specList(list: string[] | null | undefined, where: string, pattern: RegExp, what: string): string[] {
  return (list ?? []).map((p, i) => {
    if (!pattern.test(p)) throw badRequest(`'${where}[${i}]' is not ${what}`, `${where}[${i}]`);
    return p;
  });
}

function parsePackages(
  p: z.infer<typeof PackagesParam> | null | undefined,
  where: string,
): EnvironmentPackages | null {
  if (p === undefined || p === null) return null;
  return {
    npm: specList(
      p.npm,
      `${where}.npm`,
      PACKAGE_SPEC,
      "an npm package spec (name[@version], a path or a URL)",
    ),
    python: specList(
      p.python,
      `${where}.python`,
      PACKAGE_SPEC,
      "a pip requirement (name[==version], a path or a URL)",
    ),
    system: specList(p.system, `${where}.system`, SYSTEM_PACKAGE, "a system package name"),
  };
}

function parseSetup(
  cmds: z.infer<typeof SetupCommandParam>[] | null | undefined,
  where: string,
): SetupCommand[] | null {
  if (cmds === undefined || cmds === null) return null;
  return cmds.map((c, i) => ({
    command: c.command,
    cwd: c.cwd === undefined || c.cwd === null ? "" : workspaceDirectory(c.cwd, `${where}[${i}].cwd`),
  }));
}

/** Refuses what this server cannot provide (instead of accepting and ignoring it). */
function refuseUnsupported(
  c: {
    capability_directories?: string[] | null | undefined;
    desktop?: { enabled: boolean } | null | undefined;
    plugins?: unknown[] | null | undefined;
    skills?: unknown[] | null | undefined;
  },
  where: string,
): void {
  if (c.skills && c.skills.length > 0) {
    throw unsupported(`'${where}.skills': skills are not supported by this server`, `${where}.skills`);
  }
  if (c.plugins && c.plugins.length > 0) {
    throw unsupported(`'${where}.plugins': plugins are not supported by this server`, `${where}.plugins`);
  }
  if (c.capability_directories && c.capability_directories.length > 0) {
    throw unsupported(
      `'${where}.capability_directories': capability directories are not supported by this server`,
      `${where}.capability_directories`,
    );
  }
  if (c.desktop?.enabled) {
    throw unsupported(`'${where}.desktop': this server provides no desktop`, `${where}.desktop`);
  }
}

/** An inline configuration (or a template's, when it is created or replaced). */
export function parsePartial(
  c: TemplateInput | HostedEnvironmentInput,
  where: string,
  opts: { allowLocalRepositories: boolean },
): PartialSpec {
  refuseUnsupported(c, where);
  return {
    repositories: parseRepositories(c.repositories, opts.allowLocalRepositories, `${where}.repositories`),
    env: parseEnv(c.env, `${where}.env`),
    files: parseFiles(c.files, `${where}.files`),
    network: parseNetwork(c.network, `${where}.network`),
    packages: parsePackages(c.packages, `${where}.packages`),
    setup_commands: parseSetup(c.setup_commands, `${where}.setup_commands`),
  };
}

const BREADTH: Record<EnvironmentNetwork["access"], number> = { disabled: 0, restricted: 1, enabled: 2 };

/** Whether `next` allows more than `base` (a broader access, or restricted to domains `base` does not allow). */
export function broadens(base: EnvironmentNetwork, next: EnvironmentNetwork): boolean {
  if (BREADTH[next.access] !== BREADTH[base.access]) return BREADTH[next.access] > BREADTH[base.access];
  if (next.access !== "restricted") return false;
  return next.allowed_domains.some((d) => !base.allowed_domains.includes(d));
}

export const NO_NETWORK: EnvironmentNetwork = { access: "disabled", allowed_domains: [] };
const NO_PACKAGES: EnvironmentPackages = { npm: [], python: [], system: [] };

/**
 * The inline configuration over a template's: the template applies first (its files are written first, its
 * packages installed first, its setup commands run first; the inline side's variables and same-path files win);
 * omitted fields inherit the template; a network policy broader than the template's is refused.
 */
export function merge(
  template: PartialSpec | null,
  inline: PartialSpec,
  templateId: string | null,
  where: string,
): EnvironmentSpec {
  const t = template ?? {
    env: null,
    files: null,
    network: null,
    packages: null,
    repositories: null,
    setup_commands: null,
  };
  const base = t.network ?? NO_NETWORK;
  if (template && inline.network && broadens(base, inline.network)) {
    throw badRequest(
      `'${where}.network': access '${inline.network.access}' broadens the template's network policy ` +
        `('${base.access}'): an environment can only narrow its template's network`,
      `${where}.network`,
      "network_policy_broadened",
    );
  }
  const files = new Map<string, FileSpec>();
  for (const f of [...(t.files ?? []), ...(inline.files ?? [])]) files.set(f.rel, f);
  const tp = t.packages ?? NO_PACKAGES;
  const ip = inline.packages ?? NO_PACKAGES;
  const union = (a: string[], b: string[]) => [...new Set([...a, ...b])];
  return {
    env: { ...t.env, ...inline.env },
    files: [...files.values()],
    network: inline.network ?? base,
    packages: {
      npm: union(tp.npm, ip.npm),
      python: union(tp.python, ip.python),
      system: union(tp.system, ip.system),
    },
    // Given inline, they replace the template's (a list of clones does not merge path by path).
    repositories: inline.repositories ?? t.repositories ?? [],
    setup_commands: [...(t.setup_commands ?? []), ...(inline.setup_commands ?? [])],
    environment_template_id: templateId,
  };
}

/**
 * Refuses what the sandbox cannot enforce or the operator did not allow. `restricted` needs a proxy the engine's
 * sandbox would send every connection through; without it a domain list would restrict nothing.
 */
export function checkEnforceable(
  spec: EnvironmentSpec,
  opts: { systemInstaller: boolean; containers: boolean },
  where: string,
): void {
  if (spec.network.access === "restricted" && !opts.containers) {
    throw unsupported(
      `'${where}.network': access 'restricted' (domain allow or block lists) cannot be enforced by this server's ` +
        "sandbox, which has no egress proxy: use 'disabled' or 'enabled' (or run the server with " +
        "--sandbox-backend container)",
      `${where}.network.access`,
      "unsupported_network_policy",
    );
  }
  if (opts.containers && spec.packages.system.length > 0) {
    throw unsupported(
      `'${where}.packages.system': system packages are not installed into this server's containers (the agent ` +
        "has no root there); use an image that has them (--sandbox-image)",
      `${where}.packages.system`,
      "unsupported_system_packages",
    );
  }
  if (spec.packages.system.length > 0 && !opts.systemInstaller) {
    throw unsupported(
      `'${where}.packages.system': system packages need root outside the agent's sandbox; this server installs ` +
        "them only with an installer its operator configured (--environment-system-installer)",
      `${where}.packages.system`,
      "unsupported_system_packages",
    );
  }
}

/** The configuration an environment shows (no variable values, no commands, no file contents). */
export function publicConfig(spec: EnvironmentSpec, fileIds: string[]): EnvironmentConfig {
  return {
    capability_directories: [],
    files: spec.files.map((f, i) => ({
      id: fileIds[i] ?? "",
      path: f.path,
      size_bytes: fileSize(f),
      ...(f.source.type === "file_id"
        ? { type: "file_id" as const, file_id: f.source.file_id }
        : { type: "inline" as const }),
    })),
    network: spec.network,
    packages: spec.packages,
    repositories: spec.repositories,
    environment_template_id: spec.environment_template_id,
    setup_commands: spec.setup_commands.length,
  };
}

/**
 * What a template keeps in the clear, and what it seals (variables, commands, file contents; its files in order,
 * Files API references among them, which are resolved again for each session).
 */
export interface TemplateSecrets {
  env: Record<string, string> | null;
  setup_commands: SetupCommand[] | null;
  files: Array<{ path: string; rel: string; data?: string; file_id?: string }> | null;
}

export function templateParts(
  p: PartialSpec,
  desktop: { enabled: boolean } | null,
): {
  config: EnvironmentTemplateConfig;
  secrets: TemplateSecrets;
} {
  const files: TemplateFileInfo[] = (p.files ?? []).map((f) =>
    f.source.type === "file_id"
      ? { type: "file_id", path: f.path, file_id: f.source.file_id }
      : { type: "inline", path: f.path, size_bytes: f.source.data.length },
  );
  return {
    config: {
      capability_directories: null,
      files,
      network: p.network,
      packages: p.packages ?? { ...NO_PACKAGES },
      desktop,
      repositories: p.repositories,
    },
    secrets: {
      env: p.env,
      setup_commands: p.setup_commands,
      files: p.files
        ? p.files.map((f) =>
            f.source.type === "file_id"
              ? { path: f.path, rel: f.rel, file_id: f.source.file_id }
              : { path: f.path, rel: f.rel, data: f.source.data.toString("base64") },
          )
        : null,
    },
  };
}

/** A stored template as one side of a merge. */
export function templatePartial(
  config: EnvironmentTemplateConfig,
  secrets: TemplateSecrets | null,
): PartialSpec {
  const packagesGiven =
    config.packages.npm.length + config.packages.python.length + config.packages.system.length > 0;
  return {
    env: secrets?.env ?? null,
    files: secrets?.files
      ? secrets.files.map(
          (f): FileSpec => ({
            path: f.path,
            rel: f.rel,
            source:
              f.file_id !== undefined
                ? { type: "file_id", file_id: f.file_id, param: null, resolved: null }
                : { type: "inline", data: Buffer.from(f.data ?? "", "base64") },
          }),
        )
      : null,
    network: config.network,
    packages: packagesGiven ? config.packages : null,
    repositories: config.repositories ?? null,
    setup_commands: secrets?.setup_commands ?? null,
  };
}
