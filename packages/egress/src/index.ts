export {
  type AddressClass,
  classifyAddress,
  inCidrs,
  isLoopbackName,
  nonPublic,
  normalizeAddress,
  parseCidrs,
} from "./addresses.js";
export { CertificateAuthority, type IssuedCertificate } from "./ca.js";
export { DEFAULT_LIMITS, type EgressDecision, type EgressLimits, type EgressProtocol } from "./context.js";
export { EgressEndpoint, type EgressStats } from "./endpoint.js";
export { DEFAULT_PORTS, type EgressCredential, type EgressPolicy } from "./policy.js";
export { EgressProxy, type EgressProxyOptions, type OpenOptions } from "./proxy.js";
export { type EgressRefusal, REFUSED_HEADER } from "./refusals.js";
export type { SocketAccess } from "./socket-file.js";
export { type EgressSubstitution, placeholderFor } from "./substitutions.js";
export type { ResolvedAddress, Resolver } from "./target.js";
