// `@langchain/langgraph-sdk`'s Client (the 1.x line, as an npm alias; its publisher deprecated the
// one 2.x release, 2.0.0, and `latest` is 1.x) against a real gateway process: the same calls
// `useStream`, Agent Chat UI and DeerFlow's frontend make.
import { Client as Client1 } from "langgraph-sdk-1";
import { describe, expect, inject, it } from "vitest";

import { readEnvelope } from "../../src/envelope";

const QUESTION = "How does a reader verify the evidence of a citation?";
const human = (content: string) => ({ messages: [{ type: "human", content }] });

type AnyClient = InstanceType<typeof Client1>;
type Message = { type: string; content: unknown; artifact?: unknown; id?: string };

// The gated gateway's searches wait at tests/gated_upstream.py until the test releases them.
const gate = async (action: "hold" | "release") => {
  const response = await fetch(`${inject("gateUrl")}/gate/${action}`, { method: "POST" });
  expect(response.ok).toBe(true);
};
/** The queries held at the upstream once `count` searches have arrived there. */
const held = async (count: number): Promise<string[]> => {
  const response = await fetch(`${inject("gateUrl")}/gate/queries?count=${count}`);
  expect(response.ok).toBe(true);
  return (await response.json()) as string[];
};

const lines: [string, () => AnyClient, () => AnyClient][] = [
  [
    "1.x",
    () => new Client1({ apiUrl: inject("gatewayUrl") }),
    () => new Client1({ apiUrl: inject("gatedGatewayUrl") }),
  ],
];

async function collect(stream: AsyncIterable<{ event: string; data: unknown; id?: string }>) {
  const parts: { event: string; data: unknown; id?: string }[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

describe.each(lines)("@langchain/langgraph-sdk %s Client", (_line, makeClient, makeGated) => {
  it("creates, gets, searches and deletes threads", async () => {
    const client = makeClient();
    const tag = crypto.randomUUID();
    const threadId = crypto.randomUUID();
    const thread = await client.threads.create({ threadId, metadata: { tag } });
    expect(thread.thread_id).toBe(threadId);
    expect(thread.status).toBe("idle");
    await expect(client.threads.create({ threadId })).rejects.toThrow(/409|already exists/);
    expect((await client.threads.get(threadId)).metadata).toEqual({ tag });
    const found = await client.threads.search({ metadata: { tag }, limit: 5 });
    expect(found.map((t) => t.thread_id)).toEqual([threadId]);
    await client.threads.delete(threadId);
    await expect(client.threads.get(threadId)).rejects.toThrow(/404|not found/);
  });

  it("streams a run (messages-tuple + values) and its evidence verifies from the state", async () => {
    const client = makeClient();
    const { thread_id } = await client.threads.create();
    const parts = await collect(
      client.runs.stream(thread_id, "agent", {
        input: human(QUESTION),
        streamMode: ["values", "messages-tuple"],
      }),
    );
    const events = parts.map((p) => p.event);
    expect(events[0]).toBe("metadata");
    expect(events).toContain("messages");
    expect(events.at(-1)).toBe("values");
    const state = await client.threads.getState<{ messages: Message[] }>(thread_id);
    expect(state.checkpoint.checkpoint_id).toBeTruthy();
    expect(state.values.messages.map((m) => m.type)).toEqual(["human", "ai", "tool", "ai"]);
    expect((parts.at(-1)?.data as { messages: Message[] }).messages).toEqual(state.values.messages);
    const tool = state.values.messages.find((m) => m.type === "tool");
    expect(tool).toBeDefined();
    expect(readEnvelope(tool?.content, tool?.artifact).sources.length).toBeGreaterThan(0);
    const history = await client.threads.getHistory(thread_id, { limit: 1 });
    expect(history).toHaveLength(1);
    expect(history[0]?.checkpoint).toEqual(state.checkpoint);
  });

  it("accepts stream_mode as the default string and reports the run id", async () => {
    const client = makeClient();
    const { thread_id } = await client.threads.create();
    let created: { run_id: string; thread_id?: string } | undefined;
    const parts = await collect(
      client.runs.stream(thread_id, "agent", {
        input: human(QUESTION),
        onRunCreated: (meta: { run_id: string; thread_id?: string }) => (created = meta),
      }),
    );
    expect(new Set(parts.slice(1).map((p) => p.event))).toEqual(new Set(["values"]));
    expect(created?.run_id).toBe((parts[0]?.data as { run_id: string }).run_id);
    const run = await client.runs.get(thread_id, created?.run_id ?? "");
    expect(run.status).toBe("success");
  });

  it("waits, creates in the background, joins and join-streams with Last-Event-ID", async () => {
    const client = makeClient();
    const { thread_id } = await client.threads.create();
    const values = (await client.runs.wait(thread_id, "agent", { input: human(QUESTION) })) as {
      messages: Message[];
    };
    expect(values.messages.at(-1)?.type).toBe("ai");
    const run = await client.runs.create(thread_id, "agent", {
      input: human("How are citations verified?"),
      streamResumable: true,
    });
    const all = await collect(client.runs.joinStream(thread_id, run.run_id));
    expect(all[0]?.event).toBe("metadata");
    const ids = all.map((p) => Number(p.id));
    const resumed = await collect(
      client.runs.joinStream(thread_id, run.run_id, { lastEventId: String(ids[0]) }),
    );
    expect(resumed.map((p) => p.id)).toEqual(ids.slice(1).map(String));
    const joined = (await client.runs.join(thread_id, run.run_id)) as { messages: Message[] };
    expect(joined.messages).toHaveLength(8);
    const runs = await client.runs.list(thread_id);
    expect(runs.map((r) => r.status)).toEqual(["success", "success"]);
  });

  it("rejects a second run on a busy thread with 409 and enqueues in order", async () => {
    const client = makeGated();
    await gate("hold");
    try {
      const { thread_id } = await client.threads.create();
      const first = await client.runs.create(thread_id, "agent", { input: human(QUESTION) });
      expect(await held(1)).toEqual([QUESTION]); // the first run is searching: the thread is busy
      await expect(
        client.runs.create(thread_id, "agent", { input: human("second") }),
      ).rejects.toThrow(/409|busy/);
      const queued = [];
      for (let i = 0; i < 5; i++) {
        queued.push(
          await client.runs.create(thread_id, "agent", {
            input: human(`queued ${i}`),
            multitaskStrategy: "enqueue",
          }),
        );
      }
      await gate("release");
      await client.runs.join(thread_id, first.run_id);
      await Promise.all(queued.map((r) => client.runs.join(thread_id, r.run_id)));
      const expected = [QUESTION, "queued 0", "queued 1", "queued 2", "queued 3", "queued 4"];
      expect(await held(6)).toEqual(expected); // searched one run at a time, in order
      const state = await client.threads.getState<{ messages: Message[] }>(thread_id);
      const messages = state.values.messages;
      expect(messages.filter((m) => m.type === "human").map((m) => m.content)).toEqual(expected);
      const turns = Array(6).fill(["human", "ai", "tool", "ai"]).flat();
      expect(messages.map((m) => m.type)).toEqual(turns); // every turn complete, none interleaved
    } finally {
      await gate("release");
    }
  });

  it("runs statelessly and lists the assistant", async () => {
    const client = makeClient();
    const parts = await collect(client.runs.stream(null, "agent", { input: human(QUESTION) }));
    expect(parts.at(-1)?.event).toBe("values");
    const assistants = await client.assistants.search();
    expect(assistants.map((a) => a.graph_id)).toEqual(["agent"]);
    expect((await client.assistants.get("agent")).assistant_id).toBe(assistants[0]?.assistant_id);
  });

  it("answers unsupported options with 422", async () => {
    const client = makeClient();
    const { thread_id } = await client.threads.create();
    await expect(
      collect(client.runs.stream(thread_id, "agent", { input: human("x"), webhook: "http://x.invalid" })),
    ).rejects.toThrow(/422|not supported/);
  });
});
