import type { MockResponsesServer, SseEvent } from "../src/index.js";

/** Parses an SSE body into `{event, data}` pairs, checking the framing on the way. */
export function parseSse(text: string): Array<{ event: string; data: SseEvent }> {
  if (text === "") return [];
  if (!text.endsWith("\n\n"))
    throw new Error(`SSE body does not end with a blank line: ${JSON.stringify(text)}`);
  return text
    .slice(0, -2)
    .split("\n\n")
    .map((block) => {
      const lines = block.split("\n");
      if (lines.length !== 2 || !lines[0]!.startsWith("event: ") || !lines[1]!.startsWith("data: ")) {
        throw new Error(`bad SSE block: ${JSON.stringify(block)}`);
      }
      return { event: lines[0]!.slice(7), data: JSON.parse(lines[1]!.slice(6)) as SseEvent };
    });
}

/** POSTs a Responses API body to the mock and returns status, headers and the whole body text. */
export async function postResponses(
  mock: MockResponsesServer,
  body: Record<string, unknown>,
): Promise<{ status: number; contentType: string | null; text: string }> {
  const res = await fetch(`${mock.url}/responses`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, contentType: res.headers.get("content-type"), text: await res.text() };
}

/** The text of the first assistant message `output_item.done` in an SSE body. */
export function replyText(text: string): string | undefined {
  for (const { data } of parseSse(text)) {
    const item = data.item as { type?: string; content?: Array<{ text: string }> } | undefined;
    if (data.type === "response.output_item.done" && item?.type === "message") return item.content?.[0]?.text;
  }
  return undefined;
}
