// Which store operations read and which write (QUERY_ACCESS, next to the Queries interface): the embedded store
// queues writes behind an open transaction and lets reads through, so a write declared a read could land in someone
// else's transaction. The names say what an operation does; the declaration must agree with them.
import { describe, expect, it } from "vitest";
import { QUERY_ACCESS } from "../../src/store/types.js";

const WRITE_VERBS =
  /^(insert|update|delete|put|claim|release|append|replace|revoke|expire|close|start|end|copy|attach)[A-Z]/;
const READ_VERBS = /^(get|list|has|count|read|last|first|find|inactive|credentialsOf|lock)[A-Z]?/;

describe("QUERY_ACCESS", () => {
  it("declares every operation named with a write verb a write, and every other a read", () => {
    for (const [name, access] of Object.entries(QUERY_ACCESS)) {
      if (WRITE_VERBS.test(name)) expect([name, access]).toEqual([name, "write"]);
      else {
        expect(name).toMatch(READ_VERBS);
        expect([name, access]).toEqual([name, "read"]);
      }
    }
    expect(Object.values(QUERY_ACCESS).filter((a) => a === "read").length).toBe(46);
  });
});
