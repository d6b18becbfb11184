// When automations fire: five-field cron expressions in IANA timezones (croner), across DST changes.
import { describe, expect, it } from "vitest";
import {
  checkSchedule,
  latestOccurrence,
  nextOccurrence,
  nextRunOf,
} from "../../../src/domain/automations/schedule.js";
import { ApiError } from "../../../src/kernel/errors.js";
import { at } from "../../support/automation-helpers.js";

const iso = (t: number | null) => (t === null ? null : new Date(t * 1000).toISOString());

describe("automation schedules", () => {
  it("the next occurrence is strictly after the given instant, in the timezone, across DST", () => {
    const next = (expr: string, tz: string, from: string) => iso(nextOccurrence(expr, tz, at(from)));
    expect(next("30 2 * * *", "Europe/Paris", "2031-03-29T01:29:59Z")).toBe("2031-03-29T01:30:00.000Z");
    expect(next("30 2 * * *", "Europe/Paris", "2031-03-29T01:30:00Z")).toBe("2031-03-30T01:00:00.000Z");
    expect(next("30 2 * * *", "Europe/Paris", "2031-03-30T01:00:00Z")).toBe("2031-03-31T00:30:00.000Z");
    expect(next("30 2 * * *", "Europe/Paris", "2031-10-26T00:30:00Z")).toBe("2031-10-27T01:30:00.000Z");
    // New York's spring-forward night: 02:30 does not exist, it runs at 03:00 EDT.
    expect(next("30 2 * * *", "America/New_York", "2031-03-09T05:00:00Z")).toBe("2031-03-09T07:00:00.000Z");
    expect(next("0 9 * * 1-5", "Asia/Tokyo", "2031-01-03T00:00:00Z")).toBe("2031-01-06T00:00:00.000Z"); // a Friday → Monday
    expect(next("*/15 * * * *", "UTC", "2031-01-01T00:00:00.5Z")).toBe("2031-01-01T00:15:00.000Z");
  });

  it("the latest occurrence at or before an instant (what fires after downtime)", () => {
    const latest = (expr: string, tz: string, t: string) => iso(latestOccurrence(expr, tz, at(t)));
    expect(latest("0 * * * *", "UTC", "2031-01-01T06:10:00Z")).toBe("2031-01-01T06:00:00.000Z");
    expect(latest("0 * * * *", "UTC", "2031-01-01T06:00:00Z")).toBe("2031-01-01T06:00:00.000Z");
    expect(latest("30 2 * * *", "Europe/Paris", "2031-10-25T12:00:00Z")).toBe("2031-10-25T00:30:00.000Z");
  });

  it("checks expressions and timezones with 400s naming the field", () => {
    const now = at("2031-01-01T00:00:00Z");
    expect(checkSchedule("0 0 * * *", "UTC", now)).toBe(at("2031-01-02T00:00:00Z"));
    const fails = (expr: string, tz: string, param: string) => {
      try {
        checkSchedule(expr, tz, now);
      } catch (err) {
        expect(err).toBeInstanceOf(ApiError);
        expect((err as ApiError).param).toBe(param);
        return;
      }
      throw new Error(`${expr} ${tz} was accepted`);
    };
    fails("0 0 * * * *", "UTC", "expression"); // six fields
    fails("0 0 * *", "UTC", "expression");
    fails("60 0 * * *", "UTC", "expression");
    fails("0 0 31 2 *", "UTC", "expression"); // never
    fails("0 0 * * *", "Europe/Atlantis", "timezone");
  });

  it("a one-time automation's next run is its run_at while it is ahead", () => {
    const once = { type: "once" as const, expression: null, timezone: null, run_at: 100 };
    expect(nextRunOf(once, 99)).toBe(100);
    expect(nextRunOf(once, 100)).toBeNull();
  });
});
