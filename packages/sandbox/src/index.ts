export { ContainerBackend, type ContainerBackendOptions } from "./backend.js";
export { type CommandResult, ExecutorClient, type ExecutorMessage, type RunOptions } from "./client.js";
export { type ConfinementReport, TreeConfinement, type TreeLimits } from "./confine.js";
export { hostnameFor } from "./container.js";
export { SandboxError, type SandboxErrorCode } from "./errors.js";
export {
  type CgroupVersion,
  codexVendorDir,
  containerUlimits,
  DEFAULT_IMAGE,
  doctor,
  expectedImageStamp,
  type HostReport,
  IMAGE_BUILD_SCRIPT,
  IMAGE_STAMP_LABEL,
} from "./host.js";
export { buildImage } from "./image.js";
export {
  CONTAINER_SIZES,
  type ContainerSize,
  clampLimits,
  DEFAULT_LIMITS,
  DEFAULT_SIZE,
  isContainerSize,
  limitsForSize,
  MIN_LIMITS,
  validateLimits,
} from "./sizes.js";
export type * from "./types.js";
