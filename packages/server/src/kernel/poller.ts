import type { Logger } from "pino";
import type { Clock, Timer } from "./clock.js";

/**
 * Runs a background pass every `pollMs` and whenever kicked, one pass at a time: a kick during a pass runs another
 * right after it. A failing pass is logged (as `failure`) and the next one runs as usual. The automation scheduler
 * and deliverer and the webhook deliverer each run on one.
 */
export class Poller {
  private timer: Timer | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private halted = true;

  constructor(
    private readonly deps: { clock: Clock; pollMs: number; logger: Logger },
    private readonly failure: string,
    private readonly pass: () => Promise<void>,
  ) {}

  /** Whether stop() was called (a pass in progress should give up at its next safe point). */
  get stopped(): boolean {
    return this.halted;
  }

  start(): void {
    this.halted = false;
    this.timer = this.deps.clock.every(this.deps.pollMs, () => this.kick());
    this.kick();
  }

  /** Stops polling; resolves once a pass in progress has finished. */
  async stop(): Promise<void> {
    this.halted = true;
    this.timer?.cancel();
    this.timer = null;
    await this.running;
  }

  kick(): void {
    if (this.halted) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          await this.pass();
        } catch (err) {
          this.deps.logger.error({ err: String(err) }, this.failure);
        }
      } while (this.again && !this.halted);
      this.running = null;
    })();
  }
}
