/**
 * A client checked out of the pool has no `error` listener (the pool keeps one on idle clients only): a connection
 * that breaks while it is checked out but between two statements (a transaction waiting on other work) would throw
 * an unhandled `error` event and end the process. `checkedOut` gives it one for the time it is out: the error is
 * kept, and the client is released as broken (dropped, never reused).
 */
import type pg from "pg";

export async function checkedOut<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient, broken: { error: Error | undefined }) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  const broken: { error: Error | undefined } = { error: undefined };
  const onError = (err: Error) => {
    broken.error ??= err;
  };
  client.on("error", onError);
  try {
    return await fn(client, broken);
  } finally {
    client.removeListener("error", onError);
    client.release(broken.error);
  }
}
