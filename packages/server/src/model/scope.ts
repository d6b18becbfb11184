/** Who is asking: every object belongs to a project, and a caller sees its own project only. */
export interface Scope {
  projectId: string;
  /** An admin key (operator endpoints). */
  admin: boolean;
}

/** The project of everything created without API keys (no auth, or the single --token). */
export const DEFAULT_PROJECT = "default";

export const defaultScope: Scope = { projectId: DEFAULT_PROJECT, admin: true };
