import { describe, expect, it } from "vitest";
import { parseStatus } from "../../../src/platform/git-store/scan.js";

describe("the scan's reading of `git status --porcelain=v1 -z`", () => {
  it("takes the work tree's column for tracked files and '??' for new ones", () => {
    const records = [
      " M edited.txt",
      " D deleted.txt",
      " T now-a-link",
      "?? new file with spaces.txt",
      "?? nested-repo/",
      // The index against HEAD only: nothing to do in the work tree.
      "M  staged-only.txt",
      "D  dropped-from-the-index.txt",
      "A  added-to-the-index.txt",
      // Both columns: the work tree changed again.
      "MM both.txt",
      "AD added-then-deleted.txt",
    ];
    expect(parseStatus(records)).toEqual({
      modified: ["edited.txt", "deleted.txt", "now-a-link", "both.txt", "added-then-deleted.txt"],
      others: ["new file with spaces.txt", "nested-repo/"],
    });
  });

  it("skips the source path a rename or copy record carries in the next field", () => {
    expect(
      parseStatus(["R  new-name.txt", "old-name.txt", "RM moved-and-edited.txt", "from.txt", "?? x"]),
    ).toEqual({
      modified: ["moved-and-edited.txt"],
      others: ["x"],
    });
  });
});
