/** Who may call the service and from where; the key sealing secrets; where it may connect on a client's behalf. */
import { isLoopback, LOOPBACK_HOST_NAMES } from "../hosts.js";
import { ConfigError, computed, list, table, toggle, value } from "../option.js";
import { hostName, int, origin, text } from "../schemas.js";
import { host } from "./server.js";

// An empty value means "not set": `--token ""` must not silently disable a token set in the env.
const token = value({
  flag: "token",
  arg: "<secret>",
  env: ["AGENT_API_TOKEN", "EBX_SERVER_TOKEN"],
  schema: text,
  default: null,
  blank: "unset",
  help: "require this token (AGENT_API_TOKEN or EBX_SERVER_TOKEN)",
});
const insecureNoAuth = toggle({
  flag: "insecure-no-auth",
  env: "AGENT_INSECURE_NO_AUTH",
  help: "allow a non-loopback bind without a token (AGENT_INSECURE_NO_AUTH=1)",
});
const extraHosts = list({
  flag: "allowed-host",
  arg: "<name>",
  env: "AGENT_ALLOWED_HOSTS",
  schema: hostName.array(),
  default: [],
  input: true,
  help: "also answer to this Host name, repeatable (AGENT_ALLOWED_HOSTS, comma-separated)",
});

export const security = table(
  null,
  {
    token,
    insecureNoAuth,
    extraHosts,
    /** Host names the Host header may carry (empty: any). Loopback binds always include the loopback names. */
    allowedHosts: computed((get): string[] => {
      // A loopback bind answers to loopback names only (DNS rebinding); other binds to any name unless told.
      const extra = get(extraHosts);
      return isLoopback(get(host)) || extra.length > 0 ? [...LOOPBACK_HOST_NAMES, ...extra] : [];
    }),
    /** Browser origins allowed besides the service's own (`scheme://host[:port]`). */
    corsOrigins: list({
      flag: "cors-origin",
      arg: "<origin>",
      env: "AGENT_CORS_ORIGINS",
      schema: origin.array(),
      default: [],
      help: "allow this browser origin, repeatable (AGENT_CORS_ORIGINS, comma-separated)",
    }),
    /** Requests per minute per API key (or client address without a key); 0 = no limit. */
    rateLimitPerMinute: value({
      flag: "rate-limit",
      arg: "<n>",
      env: "AGENT_RATE_LIMIT",
      schema: int({ min: 0 }),
      default: (get) => (isLoopback(get(host)) ? 0 : 600),
      help: [
        "requests per minute per API key, 0 = off (AGENT_RATE_LIMIT; default off on a",
        "loopback bind, 600 otherwise)",
      ],
    }),
    /** The key sealing secrets at rest (AGENT_SECRET_KEY: 32 bytes as base64 or hex), or a file holding it. */
    secretKey: value({ env: "AGENT_SECRET_KEY", schema: text, default: null, blank: "unset" }),
    secretKeyFile: value({
      flag: "secret-key-file",
      arg: "<file>",
      env: "AGENT_SECRET_KEY_FILE",
      schema: text,
      default: null,
      blank: "unset",
      path: true,
      help: [
        "the key sealing webhook signing secrets at rest: 32 bytes, base64 or hex",
        "(AGENT_SECRET_KEY_FILE; or AGENT_SECRET_KEY holding the key itself); neither: one is",
        "generated into <data-dir>/secret.key (mode 0600). Instances sharing a database need",
        "the same key",
      ],
    }),
    /**
     * Whether the service may connect, on a client's behalf, to loopback, private, link-local and other non-public
     * addresses: webhook endpoints, HTTP MCP servers, OAuth token endpoints (platform/net/outbound-guard.ts). Off:
     * refused.
     */
    allowPrivateTargets: toggle({
      flag: ["allow-private-targets", "webhook-allow-private"],
      env: ["AGENT_ALLOW_PRIVATE_TARGETS", "AGENT_WEBHOOK_ALLOW_PRIVATE"],
      help: [
        "let clients' webhooks, HTTP MCP servers and OAuth token endpoints be on loopback,",
        "private, link-local and other non-public addresses (AGENT_ALLOW_PRIVATE_TARGETS=1;",
        "default off: refused with a 400, checked on the address connected to;",
        "--webhook-allow-private and AGENT_WEBHOOK_ALLOW_PRIVATE=1 are its former names)",
      ],
    }),
  },
  [
    (get) => {
      const bind = get(host);
      if (!isLoopback(bind) && !get(token) && !get(insecureNoAuth)) {
        throw new ConfigError(
          `refusing to bind ${bind} without a token: set AGENT_API_TOKEN (or --token), or pass --insecure-no-auth`,
        );
      }
    },
  ],
);
