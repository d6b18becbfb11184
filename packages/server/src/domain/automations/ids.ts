import { randomBytes } from "node:crypto";

export const newAutomationId = (): string => `auto_${randomBytes(12).toString("hex")}`;
export const newInvocationId = (): string => `ainv_${randomBytes(12).toString("hex")}`;
