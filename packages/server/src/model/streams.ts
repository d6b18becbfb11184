/** Why the server ends a client's stream: its key was revoked. */
export type EndReason = "revoked";
