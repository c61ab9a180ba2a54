import { readFileSync, readdirSync } from 'node:fs';

/**
 * CPU seconds (user + system, from /proc) used so far by a process, or by every PostgreSQL backend
 * serving a database: what an operation costs each side, which the throughput of a 2-core machine
 * shared by the load generator, the server and the database does not show by itself.
 */
export function processCpuSeconds(pid: number): number {
  return ticksOf(pid) / CLOCK_TICKS;
}

export function postgresCpuSeconds(databaseUrl: string): number {
  const database = new URL(databaseUrl).pathname.slice(1);
  let seen = backendTicks.get(database);
  if (!seen) backendTicks.set(database, (seen = new Map()));
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      // A backend's title: "postgres: <cluster>: <user> <database> <client> <state>".
      const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (!title.startsWith('postgres:') || !title.split(' ').includes(database)) continue;
      const fields = statFields(Number(pid));
      // pid and start time: a pid the kernel reuses is another process.
      seen.set(`${pid}:${fields[19]}`, Number(fields[11]) + Number(fields[12]));
    } catch {
      // The process ended meanwhile.
    }
  }
  let ticks = 0;
  for (const value of seen.values()) ticks += value;
  return ticks / CLOCK_TICKS;
}

/**
 * The CPU ticks last seen of each backend of a database: a backend that exits between two readings (the server's
 * pool closes a connection idle for 10 s, an autovacuum worker finishes) keeps counting what it had used, so the
 * difference of two readings is not cut by everything that backend had used before (it went negative).
 */
const backendTicks = new Map<string, Map<string, number>>();

/** Linux reports CPU time in clock ticks of 1/100 s (USER_HZ) on every architecture Node runs on. */
const CLOCK_TICKS = 100;

function ticksOf(pid: number): number {
  const fields = statFields(pid);
  return Number(fields[11]) + Number(fields[12]); // utime, stime
}

/** The fields of /proc/<pid>/stat after the command name: [11] utime, [12] stime, [19] start time. */
function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/**
 * Write system calls (write, writev, pwrite: `syscw` of /proc/<pid>/io) a process has made so far,
 * every thread included: socket writes of answers and statements, SQLite's WAL frames. Unlike CPU
 * time it does not depend on the machine's load, and in this VM each socket write is costly.
 */
export function processWriteCalls(pid: number): number {
  const line = readFileSync(`/proc/${pid}/io`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('syscw:'));
  return Number(line?.slice('syscw:'.length) ?? NaN);
}

/**
 * CPU seconds used so far by each kind of thread of a process, by the thread's name (`MainThread`,
 * `libuv-worker`, V8's workers, a worker thread's own name), summed over the threads of one name, with the context
 * switches of all its threads (voluntary: it waited for I/O or a lock; involuntary: the kernel took the core away).
 */
export function threadCpu(pid: number): { seconds: Record<string, number>; voluntary: number; involuntary: number } {
  const seconds: Record<string, number> = {};
  let voluntary = 0;
  let involuntary = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      seconds[name] = (seconds[name] ?? 0) + (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      voluntary += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      involuntary += Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return { seconds, voluntary, involuntary };
}

/** CPU seconds the whole machine has spent busy and idle (idle and iowait) so far, over all its cores (/proc/stat). */
export function machineCpuSeconds(): { busy: number; idle: number } {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  // user nice system idle iowait irq softirq steal (guest time is counted in user already)
  const ticks = fields.slice(0, 8).map(Number);
  const idle = ticks[3]! + ticks[4]!;
  return { busy: (ticks.reduce((a, b) => a + b, 0) - idle) / CLOCK_TICKS, idle: idle / CLOCK_TICKS };
}
