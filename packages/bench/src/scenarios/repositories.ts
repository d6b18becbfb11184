/**
 * Scenario 17: sessions that start from a repository of 50 000 files (`git daemon` on 127.0.0.1), taking turns:
 * with the environment's `repositories` on a server that keeps ready-made clones (the default: the workspace is a
 * rename of the spare made after the previous session), the same on a server without them (`--repository-spares
 * 0`: the mirror's objects copied, every file written), and with a plain `git clone` in a setup command (what a
 * user scripted before; every session downloads the repository). Per session: from the create request to the
 * environment ready (the workspace is there) and to the agent's first command done. The servers have checkpoints
 * off (their baseline of a new 50k-file workspace is scenario 13's subject and would weigh the same on all sides).
 */
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { startGitDaemon } from "@codex-agent-api/testkit";
import type { Context, Scenario } from "../context.js";
import { now } from "../proc.js";
import { type ServerProcess, startServer } from "../server.js";
import { median, type Row, ratio, sampleRow, type Target } from "../stats.js";

const FILES = 50_000;
const OFFICIAL = { "openai-beta": "agents=v1" };

/** A bare repository of `files` small files in 500 directories, one commit (written with fast-import). */
function buildRepository(dir: string, files: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const init = spawn("git", ["init", "--quiet", "--bare", dir], { stdio: "ignore" });
    init.on("error", reject);
    init.on("exit", (code) => {
      if (code !== 0) return reject(new Error(`git init exited ${code}`));
      const fi = spawn("git", [`--git-dir=${dir}`, "fast-import", "--quiet"], {
        stdio: ["pipe", "ignore", "pipe"],
      });
      let err = "";
      fi.stderr.on("data", (d: Buffer) => {
        err += d.toString();
      });
      fi.on("error", reject);
      fi.on("exit", (c) => (c === 0 ? resolve() : reject(new Error(`fast-import exited ${c}: ${err}`))));
      const parts: string[] = [];
      for (let i = 0; i < files; i++) {
        const body = `file ${i}\n${"x".repeat(200)}\n`;
        parts.push(`blob\nmark :${i + 1}\ndata ${Buffer.byteLength(body)}\n${body}\n`);
      }
      const msg = "50 000 files\n";
      parts.push(
        `commit refs/heads/main\ncommitter Bench <bench@localhost> 1700000000 +0000\ndata ${msg.length}\n${msg}`,
      );
      for (let i = 0; i < files; i++) parts.push(`M 100644 :${i + 1} d${Math.floor(i / 100)}/f${i}.txt\n`);
      parts.push("\n");
      fi.stdin.end(parts.join(""));
    });
  }).then(
    () =>
      new Promise<void>((resolve, reject) => {
        const sym = spawn("git", [`--git-dir=${dir}`, "symbolic-ref", "HEAD", "refs/heads/main"], {
          stdio: "ignore",
        });
        sym.on("exit", (c) => (c === 0 ? resolve() : reject(new Error(`symbolic-ref exited ${c}`))));
      }),
  );
}

const shell = (cmd: string) =>
  `Run this exact shell command and wait for it to finish: ${cmd}. Then reply with exactly: done`;

/** One session: ms from the create request to its environment ready and to its first command done. */
async function session(server: ServerProcess, environment: Record<string, unknown>, cmd: string) {
  const t0 = now();
  const stream = server.client.sse(
    "POST",
    "/v1/agents/sessions",
    { agent: { model: "mock-model" }, environment, input: shell(cmd), stream: true },
    OFFICIAL,
  );
  try {
    const ready = await stream.next(
      (f) => f.event === "agent.session.environment.ready" || f.event === "agent.session.environment.failed",
      600_000,
    );
    if (ready.event === "agent.session.environment.failed")
      throw new Error(`environment failed: ${ready.data}`);
    const done = await stream.next(
      (f) => f.event === "agent.session.turn.item.done" && f.data.includes('"command_execution"'),
      600_000,
    );
    if (!done.data.includes('"exit_code":0'))
      throw new Error(`the first command failed: ${done.data.slice(0, 400)}`);
    return { ready: ready.t - t0, first: done.t - t0 };
  } finally {
    stream.close();
  }
}

export const repositories: Scenario = {
  id: "17",
  title:
    "Repositories: sessions on a 50 000-file repository, shared mirror (with and without spares) vs a plain clone each",
  async run(ctx: Context) {
    const sessions = ctx.quick ? 5 : 10;
    const { dir } = ctx.cleanup.tempDir("repositories");
    const served = join(dir, "served");
    mkdirSync(served, { recursive: true });
    const t = now();
    await buildRepository(join(served, "big.git"), FILES);
    ctx.log(`repositories: built a ${FILES}-file repository in ${Math.round(now() - t)} ms`);
    const daemon = await startGitDaemon({ root: served });
    ctx.cleanup.add("git daemon", () => daemon.close());
    const url = daemon.url("big.git");
    const args = ["--allow-private-targets", "--checkpoints", "off"];
    const [server, bare] = await Promise.all([
      startServer(ctx.cleanup, { mockUrl: ctx.mock.url, dataDir: join(dir, "data"), args }),
      startServer(ctx.cleanup, {
        mockUrl: ctx.mock.url,
        dataDir: join(dir, "bare"),
        args: [...args, "--repository-spares", "0"],
      }),
    ]);
    const mirror: Array<{ ready: number; first: number }> = [];
    const noSpare: Array<{ ready: number; first: number }> = [];
    const plain: Array<{ ready: number; first: number }> = [];
    const check = "test -f d499/f49999.txt";
    for (let i = 0; i < sessions; i++) {
      mirror.push(await session(server, { type: "openai_hosted", repositories: [{ url }] }, check));
      noSpare.push(await session(bare, { type: "openai_hosted", repositories: [{ url }] }, check));
      plain.push(
        await session(
          server,
          {
            type: "openai_hosted",
            setup_commands: [
              {
                command: `git clone --quiet ${url} .repo && mv .repo/.git . && git checkout --quiet . && rm -rf .repo`,
              },
            ],
          },
          check,
        ),
      );
    }
    const later = (xs: Array<{ ready: number; first: number }>, k: "ready" | "first") =>
      xs.slice(1).map((x) => x[k]);
    const plainFirst = plain.map((x) => x.first);
    const vsPlain = { ref: plainFirst, name: "plain clone each" };
    const rows: Row[] = [
      sampleRow("first session (mirror made): environment ready", "ms", [mirror[0]!.ready]),
      sampleRow("later sessions, mirror + spare: environment ready", "ms", later(mirror, "ready")),
      sampleRow("later sessions, mirror only: environment ready", "ms", later(noSpare, "ready")),
      sampleRow(
        "plain clone each: environment ready",
        "ms",
        plain.map((x) => x.ready),
      ),
      sampleRow("later sessions, mirror + spare: first command done", "ms", later(mirror, "first"), vsPlain),
      sampleRow("later sessions, mirror only: first command done", "ms", later(noSpare, "first"), vsPlain),
      sampleRow("plain clone each: first command done", "ms", plainFirst),
    ];
    const targets: Target[] = [
      {
        name: "first command: plain clone each / mirror only (later sessions)",
        value: ratio(median(plainFirst), median(later(noSpare, "first"))),
        op: ">=",
        threshold: 5,
        unit: "×",
      },
      {
        name: "workspace ready per session after the first (mirror + spare)",
        value: median(later(mirror, "ready")),
        op: "<=",
        threshold: 1000,
        unit: "ms",
      },
      {
        name: "workspace ready per session after the first (mirror only)",
        value: median(later(noSpare, "ready")),
        op: "<=",
        threshold: 1000,
        unit: "ms",
      },
    ];
    return {
      id: this.id,
      title: this.title,
      rows,
      targets,
      notes: [
        `${FILES} files of ~210 bytes in one commit, served by git daemon on 127.0.0.1; sessions take turns ` +
          "(mirror + spare, mirror only, plain): a spare is made while the other two sides run.",
        "The plain side clones in a setup command (the engine's sandbox, the network setup is allowed): " +
          "`git clone --no-checkout`, then the files written once into the workspace.",
        "Both sides write the 50 000 files (about 200 MB of 4 KiB blocks) per session: on this machine's disk that " +
          "write is most of either side's time, and it varies with the disk's state (1.3 s to 17 s measured for the " +
          "same checkout).",
      ],
      data: { mirror, noSpare, plain },
    };
  },
};
