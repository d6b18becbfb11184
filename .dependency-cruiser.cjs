// The import rules of the repository (`npm run deps`, part of `npm test`): no cycles anywhere, and in
// packages/server/src an arrow may only point down the layer order below (packages/server/README.md, "Layout").
// The layer order is written once; the rules are derived from it. There are no exceptions: a violation fails `npm test`.
const SRC = "^packages/server/src/";
/** Top to bottom; folders of packages/server/src. `src/index.ts` and `src/cli.ts` (the package's entry points) sit on top. */
const LAYERS = [
  ["main"],
  ["dialects"],
  ["http"],
  ["application"],
  ["features"],
  ["domain"],
  ["platform"],
  ["store"],
  ["config"],
  ["model"],
  ["kernel"],
];
const re = (names) => `${SRC}(${names.join("|")})/`;
const ENTRY = `${SRC}(index|cli)\\.ts$`;
const upward = LAYERS.flatMap((layer, i) =>
  i === 0
    ? []
    : [
        {
          name: `no-upward-from-${layer.join("-")}`,
          comment: `${layer.join(", ")} may not import a higher layer (see packages/server/README.md "Layout")`,
          severity: "error",
          from: { path: re(layer) },
          to: { path: [re(LAYERS.slice(0, i).flat()), ENTRY] },
        },
      ],
);

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "an import cycle: modules that need each other are one module, or one of them holds a seam",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    ...upward,
    {
      name: "dialects-are-thin",
      comment:
        "a dialect decodes, calls an operation and encodes: it imports application, http, model and kernel only",
      severity: "error",
      from: { path: `${SRC}dialects/` },
      to: { path: re(["store", "domain", "features", "platform", "config", "main"]) },
    },
    {
      name: "dialects-apart",
      comment:
        "the official and the legacy dialect never import each other (main/dialects.ts puts borrowed routes together)",
      severity: "error",
      from: { path: `${SRC}dialects/openai/` },
      to: { path: `${SRC}dialects/legacy/` },
    },
    {
      name: "dialects-apart-2",
      comment:
        "the official and the legacy dialect never import each other (main/dialects.ts puts borrowed routes together)",
      severity: "error",
      from: { path: `${SRC}dialects/legacy/` },
      to: { path: `${SRC}dialects/openai/` },
    },
    {
      name: "sql-drivers-in-store",
      comment:
        "only the store (and the cluster's LISTEN/NOTIFY and rollouts) talk to the SQL drivers; main/dir-lock.ts " +
        "uses SQLite's file lock, not a database",
      severity: "error",
      from: { path: SRC, pathNot: `${SRC}(store/|platform/cluster/|main/dir-lock\\.ts$)` },
      to: { path: "node_modules/(@types/)?(pg|better-sqlite3)/" },
    },
    {
      name: "fastify-at-the-edge",
      comment: "Fastify is the HTTP edge's: http/, dialects/ and main/ only",
      severity: "error",
      from: { path: SRC, pathNot: `${SRC}(http|dialects|main)/` },
      to: { path: "node_modules/(fastify|@fastify/|fastify-)" },
    },
    {
      name: "packages-below-server",
      comment:
        "the SDK, the mock model, the testkit, the egress proxy and the sandbox never import the server",
      severity: "error",
      from: { path: "^packages/(codex|mock-model|testkit)/|^packages/(egress|sandbox)/src/" },
      to: { path: ["^packages/server/", "^codex-agent-api$"] },
    },
  ],
  options: {
    // Type-only imports count: a type from a higher layer is an arrow up all the same.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.base.json" },
    // Packages are imported by name: their built entry (dist/) is where an arrow ends, never followed.
    doNotFollow: { path: "(^|/)(node_modules|dist)/" },
    exclude: { path: "(^|/)generated/" },
    enhancedResolveOptions: {
      extensions: [".ts", ".tsx", ".js", ".d.ts"],
    },
  },
};
