import type OpenAI from "openai";
import { createContext, useContext } from "react";
import type { Auth } from "./auth";

export interface Api {
  client: OpenAI;
  auth: Auth;
  signOut(): void;
}

export const ApiContext = createContext<Api | null>(null);

export function useApi(): Api {
  const api = useContext(ApiContext);
  if (!api) throw new Error("useApi outside of a signed-in console");
  return api;
}
