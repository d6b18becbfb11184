/** Client-side routes under /console/ (the server answers every /console/* path with the app). */
import { useCallback, useEffect, useState } from "react";

export type Route =
  | { name: "sessions" }
  | { name: "session"; id: string }
  | { name: "agents" }
  | { name: "health" }
  | { name: "webhooks" };

const BASE = "/console";

export function parseRoute(pathname: string): Route {
  const rest = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname;
  const parts = rest.split("/").filter(Boolean);
  if (parts[0] === "sessions" && parts[1]) return { name: "session", id: decodeURIComponent(parts[1]) };
  if (parts[0] === "agents") return { name: "agents" };
  if (parts[0] === "health") return { name: "health" };
  if (parts[0] === "webhooks") return { name: "webhooks" };
  return { name: "sessions" };
}

export function hrefOf(route: Route): string {
  switch (route.name) {
    case "sessions":
      return `${BASE}/`;
    case "session":
      return `${BASE}/sessions/${encodeURIComponent(route.id)}`;
    case "agents":
      return `${BASE}/agents`;
    case "health":
      return `${BASE}/health`;
    case "webhooks":
      return `${BASE}/webhooks`;
  }
}

const NAVIGATE = "console:navigate";

export function navigate(route: Route): void {
  history.pushState(null, "", hrefOf(route));
  window.dispatchEvent(new Event(NAVIGATE));
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.pathname));
  const update = useCallback(() => setRoute(parseRoute(location.pathname)), []);
  useEffect(() => {
    window.addEventListener("popstate", update);
    window.addEventListener(NAVIGATE, update);
    return () => {
      window.removeEventListener("popstate", update);
      window.removeEventListener(NAVIGATE, update);
    };
  }, [update]);
  return route;
}
