/**
 * A real gateway process (`deerflow-knowledge serve`, offline responder, fresh index of the
 * bundled corpus) on 127.0.0.1 for a vitest file; stopped by its PID.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const PYTHON = join(ROOT, ".venv", "bin", "python");
const START_TIMEOUT_MS = 60_000;

export interface Gateway {
  /** The API base, e.g. http://127.0.0.1:PORT/api */
  readonly apiUrl: string;
  stop(): void;
}

/** True when the Python environment (`uv sync`) is there to run a gateway. */
export const canRunGateway = (): boolean => existsSync(PYTHON);

async function freePort(): Promise<number> {
  return await new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => done(port));
    });
  });
}

export async function startGateway(): Promise<Gateway> {
  const work = mkdtempSync(join(tmpdir(), "dk-gateway-"));
  const index = join(work, "index.sqlite");
  const cli = ["-m", "deerflow.knowledge.cli"];
  const built = spawnSync(PYTHON, [...cli, "index", "--index", index], { cwd: work, encoding: "utf8" });
  if (built.status !== 0) throw new Error(`indexing failed: ${built.stderr}`);
  const port = await freePort();
  const child: ChildProcess = spawn(
    PYTHON,
    [...cli, "serve", "--provider", "local", "--index", index, "--checkpoint", join(work, "threads.sqlite"),
      "--host", "127.0.0.1", "--port", String(port)],
    { cwd: work, stdio: "ignore" },
  );
  const apiUrl = `http://127.0.0.1:${port}/api`;
  const stop = (): void => {
    if (child.pid !== undefined && child.exitCode === null) child.kill("SIGTERM");
    rmSync(work, { recursive: true, force: true });
  };
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    try {
      const response = await fetch(`${apiUrl}/ok`);
      if (response.ok) return { apiUrl, stop };
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      stop();
      throw new Error("the gateway did not start");
    }
    await new Promise((done) => setTimeout(done, 200));
  }
}
