export {
  type ArtifactInfo,
  contentTypeFor,
  DEFAULT_MAX_ARTIFACT_BYTES,
  DEFAULT_MAX_LIST_ENTRIES,
  deleteArtifact,
  type ListArtifactsOptions,
  type ListArtifactsResult,
  listArtifacts,
  readArtifact,
  SKIPPED_DIRS,
  statArtifact,
} from "./artifacts.js";
export { ACCESS_DENIED, decodeArtifactId, encodeArtifactId, resolveInWorkspace } from "./paths.js";
export { DEFAULT_MAX_UPLOAD_BYTES, PATH_ESCAPES, type UploadResult, writeUpload } from "./upload.js";
