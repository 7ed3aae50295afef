// Starts a real gateway (`uv run deerflow-knowledge serve`, local provider, offline responder) on a
// free loopback port for the SDK tests, and stops it by its PID (its process group) afterwards.
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

export default async function setup(project: TestProject): Promise<() => void> {
  const work = mkdtempSync(join(tmpdir(), "deerflow-gateway-"));
  const index = join(work, "index.sqlite");
  const indexed = spawnSync("uv", ["run", "deerflow-knowledge", "index", "--index", index], {
    cwd: ROOT,
    encoding: "utf8",
  });
  if (indexed.status !== 0) throw new Error(`indexing failed:\n${indexed.stderr}`);
  const port = await freePort();
  let output = "";
  const child = spawn(
    "uv",
    [
      "run",
      "--project",
      ROOT,
      "deerflow-knowledge",
      "serve",
      "--provider",
      "local",
      "--index",
      index,
      "--checkpoint",
      join(work, "threads.sqlite"),
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
    ],
    { cwd: work, detached: true, stdio: ["ignore", "pipe", "pipe"] },
  );
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  const url = `http://127.0.0.1:${port}/api`;
  const stop = (): void => {
    if (child.pid !== undefined && child.exitCode === null) {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // already gone
      }
    }
    rmSync(work, { recursive: true, force: true });
  };
  try {
    await waitUntilUp(url, child, () => output);
  } catch (error) {
    stop();
    throw error;
  }
  project.provide("gatewayUrl", url);
  return stop;
}
