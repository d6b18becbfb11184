type LineKind = "add" | "del" | "hunk" | "file" | "ctx";

/** What a line of a unified diff does (`mode` "add"/"delete": a whole file's content, all added or removed). */
function lineKinds(
  text: string,
  mode: "unified" | "add" | "delete",
): Array<{ text: string; kind: LineKind }> {
  const lines = text.replace(/\n$/, "").split("\n");
  if (mode === "add") return lines.map((l) => ({ text: `+${l}`, kind: "add" }));
  if (mode === "delete") return lines.map((l) => ({ text: `-${l}`, kind: "del" }));
  return lines.map((l) => ({
    text: l,
    kind: l.startsWith("@@")
      ? "hunk"
      : l.startsWith("diff --git") || l.startsWith("+++") || l.startsWith("---")
        ? "file"
        : l.startsWith("+")
          ? "add"
          : l.startsWith("-")
            ? "del"
            : "ctx",
  }));
}

/** A diff, each line coloured by what it does. */
export function DiffText(props: { text: string; mode?: "unified" | "add" | "delete" }) {
  return (
    <pre className="diff" data-testid="diff">
      {lineKinds(props.text, props.mode ?? "unified").map((l, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: the lines of one diff never move
        <span key={i} className={`diff-${l.kind}`}>
          {l.text}
          {"\n"}
        </span>
      ))}
    </pre>
  );
}
