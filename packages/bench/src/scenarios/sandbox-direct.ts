/**
 * Part of scenario 15: a sandbox made and its first command run through its executor, with no model and no engine
 * turn — what the third-party anchors measure (create a sandbox, run one command: 0.11 s and 0.44 s median). The
 * sandbox package's backend in this process, a warm pool of 2 and none, interleaved; each sandbox destroyed after.
 */
import { ContainerBackend, ExecutorClient, limitsForSize, type Sandbox } from "@codex-agent-api/sandbox";
import { now } from "../proc.js";

export interface DirectSamples {
  cold: number[];
  warm: number[];
}

const MiB = 1024 * 1024;

export async function sandboxDirect(rootDir: string, rounds: number): Promise<DirectSamples> {
  const limits = limitsForSize("small", { overrides: { diskBytes: 256 * MiB } });
  const prefix = `cas-bench-${process.pid}`;
  const warm = await ContainerBackend.open({
    rootDir: `${rootDir}/direct-warm`,
    namePrefix: `${prefix}-w`,
    warm: [{ limits, count: 2 }],
  });
  const cold = await ContainerBackend.open({ rootDir: `${rootDir}/direct-cold`, namePrefix: `${prefix}-c` });
  const samples: DirectSamples = { cold: [], warm: [] };
  try {
    await warm.waitWarm();
    // One unmeasured round each (image pages, first exec-server).
    for (let r = -1; r < rounds; r++) {
      for (const [kind, backend] of [
        ["warm", warm],
        ["cold", cold],
      ] as const) {
        const t0 = now();
        const s = await backend.create({ id: `direct-${kind}-${r + 1}`, limits, network: { mode: "none" } });
        try {
          await firstCommand(s);
          if (r >= 0) samples[kind].push(now() - t0);
        } finally {
          await s.destroy();
        }
        // The pool refills while the other backend's round runs; the next warm round waits for it.
        if (kind === "warm") await warm.waitWarm();
      }
    }
  } finally {
    await warm.close();
    await cold.close();
  }
  return samples;
}

/** Connects to the sandbox's executor and runs one `echo` to its end. */
async function firstCommand(s: Sandbox): Promise<void> {
  const c = await ExecutorClient.open(s.executor.url, s.executor.token);
  try {
    const r = await c.run("echo sandboxed");
    if (r.stdout !== "sandboxed\n") throw new Error(`the first command printed ${JSON.stringify(r.stdout)}`);
  } finally {
    c.close();
  }
}
