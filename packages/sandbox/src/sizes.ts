// The official `container_size` mapping and the operator's maximums.
import { SandboxError } from "./errors.js";
import type { SandboxLimits } from "./types.js";

export type ContainerSize = "small" | "medium" | "large";

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

/** small 1 vCPU / 1 GiB, medium 2 / 4 GiB (the default), large 4 / 16 GiB. */
export const CONTAINER_SIZES: Readonly<Record<ContainerSize, { cpus: number; memoryBytes: number }>> = {
  small: { cpus: 1, memoryBytes: 1 * GiB },
  medium: { cpus: 2, memoryBytes: 4 * GiB },
  large: { cpus: 4, memoryBytes: 16 * GiB },
};

export const DEFAULT_SIZE: ContainerSize = "medium";

/** Limits the size does not name: processes, workspace disk and tmpfs. */
export const DEFAULT_LIMITS: Readonly<Pick<SandboxLimits, "pids" | "diskBytes" | "tmpBytes">> = {
  pids: 1024,
  diskBytes: 10 * GiB,
  tmpBytes: 512 * MiB,
};

/** Lower bounds below which a sandbox cannot work (an ext4 file system, the exec-server, a shell). */
export const MIN_LIMITS: Readonly<SandboxLimits> = {
  cpus: 0.01,
  memoryBytes: 32 * MiB,
  pids: 16,
  diskBytes: 16 * MiB,
  tmpBytes: 1 * MiB,
};

export function isContainerSize(value: unknown): value is ContainerSize {
  return value === "small" || value === "medium" || value === "large";
}

/**
 * The limits of a container size, with per-environment overrides, clamped to the operator's maximums.
 * `limitsForSize("small", { maximums: { memoryBytes: 512 * MiB } })` → 1 CPU, 512 MiB, the default pids/disk/tmp.
 */
export function limitsForSize(
  size: ContainerSize = DEFAULT_SIZE,
  opts: {
    overrides?: Partial<SandboxLimits>;
    maximums?: Partial<SandboxLimits>;
    defaults?: Partial<SandboxLimits>;
  } = {},
): SandboxLimits {
  if (!isContainerSize(size)) {
    throw new SandboxError(
      "invalid_spec",
      `container_size must be small, medium or large, not ${String(size)}`,
    );
  }
  const limits: SandboxLimits = {
    ...DEFAULT_LIMITS,
    ...CONTAINER_SIZES[size],
    ...opts.defaults,
    ...opts.overrides,
  };
  return clampLimits(limits, opts.maximums ?? {});
}

/** Each limit at most the operator's maximum for it. */
export function clampLimits(limits: SandboxLimits, maximums: Partial<SandboxLimits>): SandboxLimits {
  const out = { ...limits };
  for (const key of Object.keys(out) as Array<keyof SandboxLimits>) {
    const max = maximums[key];
    if (max !== undefined && out[key] > max) out[key] = max;
  }
  return validateLimits(out);
}

/** Throws `invalid_spec` for a limit that is not a finite number at or above its minimum; integers rounded down. */
export function validateLimits(limits: SandboxLimits): SandboxLimits {
  const out = { ...limits };
  for (const key of Object.keys(MIN_LIMITS) as Array<keyof SandboxLimits>) {
    const value = out[key];
    if (typeof value !== "number" || !Number.isFinite(value) || value < MIN_LIMITS[key]) {
      throw new SandboxError(
        "invalid_spec",
        `limits.${key} must be a number >= ${MIN_LIMITS[key]}, got ${String(value)}`,
      );
    }
    if (key !== "cpus") out[key] = Math.floor(value);
  }
  return out;
}
