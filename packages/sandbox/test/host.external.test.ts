// Host facts (doctor), the container_size mapping with maximums, hostnames and the launcher's variable line.
import { execFileSync } from "node:child_process";
import { statfsSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { envLine } from "../src/exec-server.js";
import { DEFAULT_IMAGE, doctor, hostnameFor, limitsForSize, SandboxError } from "../src/index.js";
import { ensureImage, GiB, MiB } from "./helpers.js";

beforeAll(async () => {
  await ensureImage();
}, 300_000);

describe("doctor", () => {
  it("reports podman, cgroups, rootful, loop devices and the image as data", async () => {
    const r = await doctor();
    expect(r.podman.present).toBe(true);
    expect(r.podman.version).toMatch(/^\d+\.\d+/);
    const v2 = statfsSync("/sys/fs/cgroup").type === 0x63677270;
    expect(r.cgroup.version === "v2").toBe(v2);
    if (!v2)
      expect(r.podmanArgs).toEqual([
        "--runtime",
        expect.stringMatching(/runc$/),
        "--cgroup-manager",
        "cgroupfs",
      ]);
    expect(r.cgroup.controllers).toEqual(expect.arrayContaining(["memory", "pids"]));
    expect(r.rootful).toBe(process.getuid?.() === 0);
    expect(r.image).toMatchObject({ name: DEFAULT_IMAGE, present: true, current: true });
    expect(r.image.stamp).toBe(r.image.expectedStamp);
    expect(r.problems).toEqual([]);
    const missing = await doctor({ image: "localhost/no-such-image:0" });
    expect(missing.image.present).toBe(false);
    expect(missing.problems.join(" ")).toMatch(/no-such-image.*missing/);
  });
});

describe("container_size", () => {
  it("maps small, medium and large and clamps to the operator's maximums", () => {
    expect(limitsForSize("small")).toMatchObject({ cpus: 1, memoryBytes: GiB });
    expect(limitsForSize()).toMatchObject({ cpus: 2, memoryBytes: 4 * GiB });
    expect(limitsForSize("large")).toMatchObject({ cpus: 4, memoryBytes: 16 * GiB });
    expect(
      limitsForSize("large", { maximums: { cpus: 2, memoryBytes: 8 * GiB, diskBytes: 512 * MiB } }),
    ).toMatchObject({
      cpus: 2,
      memoryBytes: 8 * GiB,
      diskBytes: 512 * MiB,
    });
    expect(() => limitsForSize("huge" as "small")).toThrow(SandboxError);
    expect(() => limitsForSize("small", { overrides: { pids: 1 } })).toThrow(/pids/);
  });
});

describe("names and variables", () => {
  it("makes lowercase hostnames", () => {
    expect(hostnameFor("Sess_ABC.def")).toBe("sess-abc-def");
    expect(hostnameFor("x".repeat(100))).toHaveLength(63);
    expect(hostnameFor("___")).toBe("sandbox");
  });

  it("quotes variables so that the shell gives them back unchanged, and refuses what it cannot carry", () => {
    const env = { A: 'it\'s $HOME `id` "q" \\ ;', B: "", C_1: "x y" };
    const out = execFileSync("sh", ["-c", `${envLine(env)}; printf '%s|' "$A" "$B" "$C_1"`], {
      encoding: "utf8",
    });
    expect(out).toBe(`${env.A}||x y|`);
    expect(() => envLine({ "A-B": "x" })).toThrow(/variable name/);
    expect(() => envLine({ A: "x\ny" })).toThrow(/newlines/);
  });
});
