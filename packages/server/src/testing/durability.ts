/**
 * Kill -9 under concurrent write load, shared by the durability test and `npm run bench:durability`:
 * `clients` writers add memories back to back, each as its own end user; once `killAfter` writes are
 * acknowledged the server is killed mid-stream. Afterwards every acknowledged memory must be served
 * by a restarted server (through export, the path a client would use to get its data back).
 */

export interface KillTarget {
  url: string;
  key: string;
  /** SIGKILL, and wait for the process to be gone. */
  kill(): Promise<void>;
}

export interface TrialLoad {
  /** end user -> texts the server acknowledged (201) before it died. */
  acknowledged: Map<string, string[]>;
  /** Writes in flight when the server died (no answer). */
  unanswered: number;
}

export async function writeUntilKilled(
  target: KillTarget,
  trial: string,
  clients = 8,
  killAfter = 50,
): Promise<TrialLoad> {
  const acknowledged = new Map<string, string[]>();
  let total = 0;
  let unanswered = 0;
  let killing: Promise<void> | undefined;
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      const endUser = `durable-${trial}-c${client}`;
      const mine: string[] = [];
      acknowledged.set(endUser, mine);
      for (let n = 0; ; n++) {
        const text = `durable fact ${n} of client ${client} in trial ${trial}`;
        try {
          const res = await fetch(`${target.url}/memory/add`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-api-key': target.key, 'x-end-user-id': endUser },
            body: JSON.stringify({ text }),
          });
          if (res.status !== 201) throw new Error(`write answered ${res.status}: ${await res.text()}`);
          await res.arrayBuffer();
          mine.push(text);
          if (++total === killAfter) killing = target.kill();
        } catch (error) {
          if (!killing) throw error;
          unanswered++;
          return;
        }
      }
    }),
  );
  await killing;
  return { acknowledged, unanswered };
}

/** Acknowledged memories a (restarted) server no longer has. */
export async function lostWrites(url: string, key: string, load: TrialLoad): Promise<string[]> {
  const lost: string[] = [];
  for (const [endUser, texts] of load.acknowledged) {
    const res = await fetch(`${url}/memory/export`, { headers: { 'x-api-key': key, 'x-end-user-id': endUser } });
    if (res.status !== 200) throw new Error(`export answered ${res.status}`);
    const kept = new Set(((await res.json()) as { memories: { text: string }[] }).memories.map((m) => m.text));
    lost.push(...texts.filter((t) => !kept.has(t)));
  }
  return lost;
}

export const acknowledgedCount = (load: TrialLoad) =>
  [...load.acknowledged.values()].reduce((n, texts) => n + texts.length, 0);
