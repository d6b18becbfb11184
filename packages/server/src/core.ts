/**
 * The service's parts, built from one config and its infrastructure (store, engines, clock, logger): what the
 * HTTP layer and the CLI call. No globals; tests build it with an in-memory store or a stub engine.
 */
import type { Logger } from "pino";
import { LocalCluster, localRollouts } from "./cluster/local.js";
import type { Cluster, Rollouts } from "./cluster/types.js";
import type { Config } from "./config.js";
import { AgentService } from "./domain/agents.js";
import { GoalBook } from "./domain/goals/book.js";
import { GoalService } from "./domain/goals/service.js";
import { KeyService } from "./domain/keys.js";
import { MessageService } from "./domain/messages.js";
import { SessionService } from "./domain/sessions.js";
import { TurnControl } from "./domain/turns/control.js";
import { TurnRunner } from "./domain/turns/runner.js";
import { Takeover } from "./domain/turns/takeover.js";
import type { Engines } from "./engine/types.js";
import type { Store } from "./store/types.js";
import { EventHub } from "./stream/hub.js";
import { type Clock, systemClock } from "./util/clock.js";

export interface Infrastructure {
  store: Store;
  engines: Engines;
  logger: Logger;
  clock?: Clock;
  /** The other instances on the same database (default: none, the embedded store's single instance). */
  cluster?: Cluster;
  rollouts?: Rollouts;
}

export interface Core {
  config: Config;
  logger: Logger;
  clock: Clock;
  store: Store;
  engines: Engines;
  hub: EventHub;
  agents: AgentService;
  sessions: SessionService;
  runner: TurnRunner;
  /** Operations on running turns, wherever they run. */
  control: TurnControl;
  cluster: Cluster;
  /** Ends the turns of dead instances (several instances on one database). */
  takeover: Takeover;
  goals: GoalService;
  messages: MessageService;
  keys: KeyService;
}

export function createCore(config: Config, infra: Infrastructure): Core {
  const { store, engines, logger } = infra;
  const clock = infra.clock ?? systemClock;
  const cluster = infra.cluster ?? new LocalCluster();
  const rollouts = infra.rollouts ?? localRollouts;
  const hub = new EventHub(store, { now: () => clock.now() });
  const runner = new TurnRunner({ store, hub, engines, config, clock, logger, cluster, rollouts });
  const control = new TurnControl({ runner, cluster, store, logger });
  const agents = new AgentService(store, clock, config.model);
  const sessions = new SessionService({
    store,
    hub,
    engines,
    agents,
    runner,
    control,
    config,
    clock,
    logger,
  });
  const book = new GoalBook(store, hub, clock, config.goals);
  const goals = new GoalService({ book, runner, control, engines, clock, logger });
  const takeover = new Takeover({ cluster, runner, book, logger });
  const messages = new MessageService({ store, runner, control, goals });
  const keys = new KeyService(store, clock);
  return {
    config,
    logger,
    clock,
    store,
    engines,
    hub,
    agents,
    sessions,
    runner,
    control,
    cluster,
    takeover,
    goals,
    messages,
    keys,
  };
}

/**
 * Start-up recovery: what a crash left running is failed, goals that ran come back paused. With other instances on
 * the same database, only the turns of dead instances are (the takeover sweep); the others' are theirs.
 */
export async function recover(core: Core): Promise<void> {
  const { runner, goals, store, logger } = core;
  if (core.cluster.stats().kind !== "single") {
    await core.takeover.sweep();
    return;
  }
  const fixed = await runner.recover();
  if (fixed) logger.warn({ sessions: fixed }, "marked turns interrupted by the last shutdown as failed");
  await goals.pauseAfterRestart(async (id) => (await store.getSession(id))?.thread_id ?? null);
}
