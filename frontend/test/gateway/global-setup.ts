// Starts a real gateway (`uv run deerflow-knowledge serve`, local provider, offline responder) on a
// free loopback port for the SDK tests, and a second one whose LightRAG provider searches a gated
// upstream (tests/gated_upstream.py: its searches wait until a test opens the gate, so a run is
// provably in progress). Stops each process by its PID (its process group) afterwards.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    gatewayUrl: string;
    gatedGatewayUrl: string;
    gateUrl: string;
  }
}

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const START_TIMEOUT_MS = 60_000;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function waitUntilUp(url: string, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`gateway exited:\n${log()}`);
    try {
      const response = await fetch(`${url}/ok`);
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`gateway did not start:\n${log()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

type Child = { child: ChildProcess; output: () => string };

function start(args: string[], cwd: string): Child {
  let output = "";
  const child = spawn("uv", ["run", "--project", ROOT, ...args], {
    cwd,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  return { child, output: () => output };
}

function stopChild({ child }: Child): void {
  if (child.pid !== undefined && child.exitCode === null) {
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      // already gone
    }
  }
}

async function listeningUrl({ child, output }: Child): Promise<string> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const found = /^listening (\S+)$/m.exec(output());
    if (found?.[1]) return found[1];
    if (child.exitCode !== null) throw new Error(`gated upstream exited:\n${output()}`);
    if (Date.now() > deadline) throw new Error(`gated upstream did not start:\n${output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function serve(
  children: Child[],
  work: string,
  name: string,
  provider: string[],
): Promise<string> {
  const port = await freePort();
  const gateway = start(
    [
      "deerflow-knowledge",
      "serve",
      ...provider,
      "--checkpoint",
      join(work, `${name}.sqlite`),
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
    ],
    work,
  );
  children.push(gateway);
  const url = `http://127.0.0.1:${port}/api`;
  await waitUntilUp(url, gateway.child, gateway.output);
  return url;
}

export default async function setup(project: TestProject): Promise<() => void> {
  const work = mkdtempSync(join(tmpdir(), "deerflow-gateway-"));
  const index = join(work, "index.sqlite");
  const indexed = spawnSync("uv", ["run", "deerflow-knowledge", "index", "--index", index], {
    cwd: ROOT,
    encoding: "utf8",
  });
  if (indexed.status !== 0) throw new Error(`indexing failed:\n${indexed.stderr}`);
  const children: Child[] = [];
  const stop = (): void => {
    children.forEach(stopChild);
    rmSync(work, { recursive: true, force: true });
  };
  try {
    const upstream = start(["python", "-m", "tests.gated_upstream"], ROOT);
    children.push(upstream);
    const gateUrl = await listeningUrl(upstream);
    const url = await serve(children, work, "threads", ["--provider", "local", "--index", index]);
    const gatedUrl = await serve(children, work, "gated", [
      "--provider",
      "lightrag",
      "--base-url",
      gateUrl,
    ]);
    project.provide("gatewayUrl", url);
    project.provide("gatedGatewayUrl", gatedUrl);
    project.provide("gateUrl", gateUrl);
  } catch (error) {
    stop();
    throw error;
  }
  return stop;
}
