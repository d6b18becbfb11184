// Building the sandbox image from this package's script (offline, from Debian's packages; cached by content stamp).
import { spawn } from "node:child_process";
import { IMAGE_BUILD_SCRIPT } from "./host.js";

/** Runs scripts/build-image.sh (root, podman, debootstrap); resolves with the image name. Its log goes to `log`. */
export function buildImage(
  opts: { image?: string; force?: boolean; log?: (line: string) => void } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", [IMAGE_BUILD_SCRIPT, ...(opts.image ? [opts.image] : [])], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...(opts.force ? { SANDBOX_IMAGE_FORCE: "1" } : {}) },
    });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      out += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      err = (err + d).slice(-16384);
      for (const line of d.split("\n")) if (line) opts.log?.(line);
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) resolve(out.trim().split("\n").at(-1) ?? "");
      else
        reject(
          new Error(`build-image.sh failed (exit ${code}): ${err.trim().split("\n").slice(-5).join(" | ")}`),
        );
    });
  });
}
