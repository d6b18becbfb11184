#!/usr/bin/env node
/**
 * The benchmark suite: `npm run bench [-- --quick] [--json <path>] [--only 1,4]`. Prints one table per scenario
 * and a summary against the targets (reported, never asserted).
 */
import { writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { MockResponsesServer, scriptedModel } from "@codex-agent-api/testkit";
import { type Context, type Scenario, type ScenarioResult, startTurnRig, type TurnRig } from "./context.js";
import { Cleanup, now } from "./proc.js";
import { apiThroughput } from "./scenarios/api.js";
import { checkpoints } from "./scenarios/checkpoints.js";
import { cluster } from "./scenarios/cluster.js";
import { fanout } from "./scenarios/fanout.js";
import { footprint } from "./scenarios/footprint.js";
import { install } from "./scenarios/install.js";
import { replayLog } from "./scenarios/replay.js";
import { repositories } from "./scenarios/repositories.js";
import { restart } from "./scenarios/restart.js";
import { sandboxes } from "./scenarios/sandboxes.js";
import { slowConsumers } from "./scenarios/slow-consumers.js";
import { soak } from "./scenarios/soak.js";
import { toolRoundTrip } from "./scenarios/tools.js";
import { concurrency, goal, turnLatency } from "./scenarios/turns.js";
import { setServerCli, setServerNodeArgs } from "./server.js";
import { checkTarget, formatTable, formatTargets, type TargetResult } from "./stats.js";

const SCENARIOS: Scenario[] = [
  turnLatency,
  concurrency,
  goal,
  apiThroughput,
  fanout,
  replayLog,
  footprint,
  restart,
  soak,
  toolRoundTrip,
  cluster,
  checkpoints,
  slowConsumers,
  sandboxes,
  install,
  repositories,
];
/** Scenarios that use the shared turn rig: it is closed once the last of them has run. */
const RIG_USERS = new Set(["1", "2", "3", "10"]);

/** 1/5/15-minute load averages: other work on the machine skews every number here. */
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

const USAGE = `Usage: npm run bench -- [--quick] [--json <path>] [--only <ids>]

  --quick        smaller samples (finishes in under 2 minutes on 2 cores)
  --json <path>  also write every result as JSON
  --only <ids>   comma-separated scenario ids (1-10, 12-17)
  --profile-server <dir>
                 run every server process with --cpu-prof, writing .cpuprofile files to <dir>
  --server-cli <path>
                 start this cli.js instead of the workspace build (e.g. a patched copy, to compare)
`;

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: "boolean", default: false },
      json: { type: "string" },
      only: { type: "string" },
      "profile-server": { type: "string" },
      "server-cli": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const only = values.only ? new Set(values.only.split(",").map((s) => s.trim())) : null;
  const selected = SCENARIOS.filter((s) => !only || only.has(s.id));
  const quick = values.quick ?? false;
  if (values["server-cli"]) setServerCli(resolve(values["server-cli"]));
  if (values["profile-server"]) setServerNodeArgs(["--cpu-prof", "--cpu-prof-dir", values["profile-server"]]);
  const cleanup = new Cleanup();
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    process.stderr.write(`\n${signal}: cleaning up…\n`);
    void cleanup.runAll().then(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  const started = now();
  const loadStart = load();
  const mock = await MockResponsesServer.start({ fallback: scriptedModel() });
  cleanup.add("mock model", () => mock.close());
  const shared: { rig: Promise<TurnRig> | null } = { rig: null };
  const ctx: Context = {
    quick,
    cleanup,
    mock,
    log: (m) => process.stderr.write(`${m}\n`),
    turnRig: () => {
      shared.rig ??= startTurnRig({ cleanup, mock });
      return shared.rig;
    },
  };
  const out = process.stdout;
  out.write(
    `codex-agent-api bench — ${quick ? "quick" : "full"} mode; node ${process.version}, ${cpus().length} CPU(s), ` +
      `${process.platform}/${process.arch}; load average ${loadStart}; mock model on ${mock.url}\n\n`,
  );
  const results: Array<ScenarioResult & { seconds: number }> = [];
  const failures: Array<{ id: string; title: string; error: string }> = [];
  const lastRigUser = [...selected].reverse().find((s) => RIG_USERS.has(s.id))?.id;
  try {
    for (const s of selected) {
      if (interrupted) break;
      ctx.log(`[${s.id}] ${s.title}…`);
      const t0 = now();
      try {
        const r = await s.run(ctx);
        const seconds = (now() - t0) / 1000;
        results.push({ ...r, seconds });
        out.write(formatTable(`[${r.id}] ${r.title} — ${seconds.toFixed(1)} s`, r.rows));
        for (const n of r.notes) out.write(`  · ${n}\n`);
        out.write("\n");
      } catch (err) {
        const error = err instanceof Error ? (err.stack ?? err.message) : String(err);
        failures.push({ id: s.id, title: s.title, error });
        out.write(`[${s.id}] ${s.title}: FAILED\n${error}\n\n`);
      } finally {
        mock.reset();
        mock.setFallback(scriptedModel());
        if (s.id === lastRigUser && shared.rig) {
          const rig = shared.rig;
          shared.rig = null;
          await rig.then((r) => r.close()).catch(() => {});
        }
      }
    }
  } finally {
    await cleanup.runAll();
  }
  const targets: TargetResult[] = results.flatMap((r) => r.targets.map(checkTarget));
  const wall = (now() - started) / 1000;
  const loadEnd = load();
  out.write("Summary against the targets (reported, not asserted)\n");
  out.write("-----------------------------------------------------\n");
  out.write(formatTargets(targets));
  out.write(
    `\nwall time ${wall.toFixed(1)} s; load average at the end ${loadEnd}${failures.length ? `; ${failures.length} scenario(s) failed` : ""}\n`,
  );
  if (values.json) {
    writeFileSync(
      values.json,
      `${JSON.stringify(
        {
          mode: quick ? "quick" : "full",
          startedAt: new Date(Date.now() - wall * 1000).toISOString(),
          wallSeconds: wall,
          node: process.version,
          cpus: cpus().length,
          platform: `${process.platform}/${process.arch}`,
          loadAverage: { start: loadStart, end: loadEnd },
          scenarios: results,
          targets,
          failures,
        },
        null,
        2,
      )}\n`,
    );
    out.write(`results written to ${values.json}\n`);
  }
  return failures.length > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(
      `bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
