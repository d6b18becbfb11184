import type { ReactNode } from "react";
import { useApi } from "../api/context";
import { Link } from "../components/Link";
import { useRoute } from "../router";

export function Layout(props: { children: ReactNode }) {
  const { signOut, auth } = useApi();
  const route = useRoute();
  const current = (name: string) => (route.name === name ? "active" : undefined);
  return (
    <div className="layout">
      <header className="top">
        <strong>codex-agent-api</strong>
        <nav>
          <Link to={{ name: "sessions" }} className={current("sessions") ?? current("session")}>
            Sessions
          </Link>
          <Link to={{ name: "agents" }} className={current("agents")}>
            Agents
          </Link>
          <Link to={{ name: "webhooks" }} className={current("webhooks")}>
            Webhooks
          </Link>
          <Link to={{ name: "health" }} className={current("health")}>
            Engines
          </Link>
        </nav>
        <span className="spacer" />
        <span className="muted">{auth.mode === "none" ? "no auth" : "signed in"}</span>
        <button type="button" className="secondary" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main className="content">{props.children}</main>
    </div>
  );
}
