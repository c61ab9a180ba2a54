import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { dirname, join } from 'node:path';

/** Runs `work` under V8's CPU profiler when `dir` is given, writing dir/<name>.cpuprofile. */
export async function profiled<T>(dir: string | undefined, name: string, work: () => Promise<T>): Promise<T> {
  if (!dir) return work();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await work();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  }
}

/**
 * V8's CPU profiler of another process, through its inspector (started with `--inspect=127.0.0.1:PORT`): `start()`
 * and `stop(file)` around one phase of a benchmark, so each phase gets a profile of its own (`--cpu-prof` profiles
 * a process's whole life, warm-up and every other phase included). Main thread only.
 */
export async function inspectorProfiler(port: number) {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{
    webSocketDebuggerUrl: string;
  }>;
  const socket = new WebSocket(targets[0]!.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = reject;
  });
  let id = 0;
  const waiting = new Map<number, (result: unknown) => void>();
  socket.onmessage = (message) => {
    const reply = JSON.parse(String(message.data)) as { id?: number; result?: unknown };
    if (reply.id !== undefined) waiting.get(reply.id)?.(reply.result);
  };
  const post = (method: string, params: object = {}) =>
    new Promise<unknown>((resolve) => {
      waiting.set(++id, resolve);
      socket.send(JSON.stringify({ id, method, params }));
    });
  await post('Profiler.enable');
  // V8's default, 1 ms, as `--cpu-prof` samples.
  await post('Profiler.setSamplingInterval', { interval: 1000 });
  return {
    start: () => post('Profiler.start'),
    stop: async (file: string) => {
      const { profile } = (await post('Profiler.stop')) as { profile: unknown };
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, JSON.stringify(profile));
    },
    close: () => socket.close(),
  };
}
