/** A TCP proxy to a local port whose connections can all be cut at once (and new ones refused). */
import { createServer, type Server, Socket } from "node:net";

export interface TcpProxy {
  port: number;
  /** Destroys every connection and refuses new ones; resolves once every socket has closed. */
  cut(): Promise<void>;
  close(): Promise<void>;
}

export async function tcpProxy(target: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let open = true;
  const server: Server = createServer((client) => {
    if (!open) {
      client.destroy();
      return;
    }
    const upstream = new Socket();
    sockets.add(client);
    sockets.add(upstream);
    upstream.connect(target, "127.0.0.1");
    client.pipe(upstream).pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    async cut() {
      open = false;
      const closing = [...sockets].map(
        (s) => new Promise<void>((r) => (s.closed ? r() : s.once("close", () => r()))),
      );
      for (const s of sockets) s.destroy();
      await Promise.all(closing);
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
