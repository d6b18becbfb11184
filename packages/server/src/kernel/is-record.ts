/** A plain JSON object (not null, not an array): what parsed configuration and tool arguments are read as. */
export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
