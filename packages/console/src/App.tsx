import { useMemo, useState } from "react";
import { type Auth, clearAuth, loadAuth, saveAuth } from "./api/auth";
import { createClient } from "./api/client";
import { type Api, ApiContext } from "./api/context";
import { useRoute } from "./router";
import { AgentsView } from "./views/AgentsView";
import { HealthView } from "./views/HealthView";
import { Layout } from "./views/Layout";
import { SessionsView } from "./views/SessionsView";
import { SessionView } from "./views/SessionView";
import { SignIn } from "./views/SignIn";
import { WebhooksView } from "./views/WebhooksView";

export function App() {
  const [auth, setAuth] = useState<Auth | null>(loadAuth);
  const api = useMemo<Api | null>(
    () =>
      auth
        ? {
            auth,
            client: createClient(auth),
            signOut: () => {
              clearAuth();
              setAuth(null);
            },
          }
        : null,
    [auth],
  );
  if (!api) {
    return (
      <SignIn
        onSignedIn={(a) => {
          saveAuth(a);
          setAuth(a);
        }}
      />
    );
  }
  return (
    <ApiContext.Provider value={api}>
      <Layout>
        <CurrentView />
      </Layout>
    </ApiContext.Provider>
  );
}

function CurrentView() {
  const route = useRoute();
  switch (route.name) {
    case "sessions":
      return <SessionsView />;
    case "session":
      return <SessionView key={route.id} sessionId={route.id} />;
    case "agents":
      return <AgentsView />;
    case "health":
      return <HealthView />;
    case "webhooks":
      return <WebhooksView />;
  }
}
