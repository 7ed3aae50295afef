/**
 * The gateway's HTTP API as the chat page uses it: threads, state, and runs streamed over SSE.
 */

export interface WireMessage {
  readonly type: string;
  readonly id?: string | null;
  readonly content: unknown;
  readonly name?: string | null;
  readonly artifact?: unknown;
  readonly tool_calls?: readonly { name: string; args: Record<string, unknown>; id?: string | null }[];
  readonly tool_call_id?: string;
}

export interface ThreadSummary {
  readonly thread_id: string;
  readonly title: string;
  readonly updated_at: string | null;
}

export interface GatewayInfo {
  readonly provider: string;
  readonly model: string;
}

export type RunEvent =
  | { readonly event: "values"; readonly data: { messages: WireMessage[] } }
  | { readonly event: "messages"; readonly data: [WireMessage, Record<string, unknown>] }
  | { readonly event: "error"; readonly data: { message: string } }
  | { readonly event: "metadata" | "end" | "updates"; readonly data: unknown };

async function json<T>(response: Response): Promise<T> {
  if (!response.ok) {
    let detail = `${response.status} ${response.statusText}`;
    try {
      const body = (await response.json()) as { error?: unknown };
      if (typeof body.error === "string") detail = body.error;
    } catch {
      /* keep the status line */
    }
    throw new Error(detail);
  }
  return (await response.json()) as T;
}

export const getInfo = async (): Promise<GatewayInfo> => json(await fetch("api/info"));
export const listThreads = async (): Promise<ThreadSummary[]> => json(await fetch("api/threads"));
export const createThread = async (): Promise<{ thread_id: string }> =>
  json(await fetch("api/threads", { method: "POST" }));
export const getState = async (threadId: string): Promise<{ values: { messages: WireMessage[] } }> =>
  json(await fetch(`api/threads/${encodeURIComponent(threadId)}/state`));

/** Parse a `text/event-stream` body into events as they arrive. */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<RunEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let boundary = buffer.indexOf("\n\n");
    while (boundary !== -1) {
      const block = buffer.slice(0, boundary);
      buffer = buffer.slice(boundary + 2);
      let event = "message";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length > 0) yield { event, data: JSON.parse(data.join("\n")) } as RunEvent;
      boundary = buffer.indexOf("\n\n");
    }
  }
}

export async function* streamRun(threadId: string, question: string): AsyncGenerator<RunEvent> {
  const response = await fetch(`api/threads/${encodeURIComponent(threadId)}/runs/stream`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      input: { messages: [{ type: "human", content: question }] },
      stream_mode: ["values", "messages"],
    }),
  });
  if (!response.ok || response.body === null) {
    await json(response);
    throw new Error("the gateway sent no stream");
  }
  yield* readEvents(response.body);
}
