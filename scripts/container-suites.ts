// vitest global setup of the `container` project (the agent suites again, every session in a container): the
// sandbox image first (built when missing: one build, not one per worker), and once the run ends, whatever sandboxes
// its servers left (a server a test stops keeps its sandboxes for its next start; one run as a CLI is not removed by
// its test) are removed with their mounts.
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { ensureSandboxImage, removeSandboxes } from "../packages/server/test/support/sandbox.js";

const base = process.env.SANDBOX_TEST_ROOT ?? "/var/tmp";

export async function setup(): Promise<() => Promise<void>> {
  const started = Date.now();
  await ensureSandboxImage();
  return async () => {
    for (const name of readdirSync(base)) {
      const dir = join(base, name);
      // Only the roots this run made (another run on this machine keeps its own).
      if (!name.startsWith("cas-sbx-suite-") || statSync(dir).birthtimeMs < started) continue;
      await removeSandboxes(dir).catch((err: unknown) =>
        console.error(`could not remove ${dir}: ${String(err)}`),
      );
    }
  };
}
