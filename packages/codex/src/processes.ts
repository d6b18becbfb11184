/**
 * Processes a thread's commands keep running: the engine's "background terminals" (experimental methods of the
 * app-server, outside the stable generated protocol: `thread/backgroundTerminals/list` and `…/terminate`). A
 * command the model runs is such a process from its start until it exits, whatever happens to the turn that ran
 * it: an interrupted turn leaves it running.
 */

/** One running process of a thread's command. */
export interface BackgroundProcess {
  /** The command item that started it. */
  itemId: string;
  /** The engine's id of the process (the command item's `processId`). */
  processId: string;
  command: string;
  cwd: string;
  /** The operating system's pid, when the engine knows it (not inside the sandbox). */
  osPid: number | null;
}

type Request = <T>(method: string, params: unknown) => Promise<T>;

interface ListPage {
  data: BackgroundProcess[];
  nextCursor: string | null;
}

export async function listBackgroundProcesses(
  request: Request,
  threadId: string,
): Promise<BackgroundProcess[]> {
  const out: BackgroundProcess[] = [];
  for (let cursor: string | null = null; ; ) {
    const page: ListPage = await request<ListPage>("thread/backgroundTerminals/list", {
      threadId,
      limit: 100,
      ...(cursor ? { cursor } : {}),
    });
    for (const p of page.data) {
      out.push({ itemId: p.itemId, processId: p.processId, command: p.command, cwd: p.cwd, osPid: p.osPid });
    }
    if (!page.nextCursor || page.data.length === 0) return out;
    cursor = page.nextCursor;
  }
}

/** Ends one process with its whole process tree (its sandbox goes with it); false if it had already exited. */
export async function terminateBackgroundProcess(
  request: Request,
  threadId: string,
  processId: string,
): Promise<boolean> {
  const res = await request<{ terminated: boolean }>("thread/backgroundTerminals/terminate", {
    threadId,
    processId,
  });
  return res.terminated;
}
