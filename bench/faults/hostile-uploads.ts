/**
 * Hostile uploads under write load (issue 46, defect 6): flate-bomb PDFs, page-count bomb PDFs and
 * zip-bomb DOCX files, each both far past the server's default reading bounds (refused by counting)
 * and built to sit just inside them (so a parser really reads it: the worst a file can cost), all
 * uploaded at once by other end users. Reports the server's RSS peak over its RSS before the
 * uploads (bound: < 512 MB; the server and its reading processes together, and the server alone) and
 * the uploads' answers; the files are made here, never committed.
 */
import { readFileSync } from 'node:fs';
import { loadConfig } from '../../packages/server/src/config.js';
import { docxBomb, pdfFlateBomb, pdfOfPages } from '../../packages/server/src/testing/hostile-files.js';
import type { FaultScenario } from './scenario.js';

const SAMPLE_MS = 20;
const MB = 1024 * 1024;

/** A process's resident set in MB, read from /proc (0 once it is gone). */
function rssMb(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** The server's processes: itself and its children (files are read in processes of their own), recursively. */
function processTree(pid: number): number[] {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    /* gone */
  }
  return [pid, ...children.flatMap(processTree)];
}

/** The files, by name; sizes from the bounds the bench's server runs with (its defaults, or ENGRAM_PARSE_* set for the bench). */
function hostileFiles(): Array<{ name: string; content: Buffer }> {
  const bounds = loadConfig(process.env).parse;
  // Inflating to 2 MB under the bound: counted, let through, and then inflated again by the parser.
  const within = Math.floor(bounds.maxExpandedBytes / MB) - 2;
  return [
    { name: 'flate-bomb.pdf', content: pdfFlateBomb(1024) },
    { name: 'flate-bomb-within.pdf', content: pdfFlateBomb(within) },
    { name: 'page-bomb.pdf', content: pdfOfPages(15_000) },
    { name: 'page-bomb-within.pdf', content: pdfOfPages(bounds.maxPages) },
    { name: 'zip-bomb.docx', content: docxBomb(1024) },
    { name: 'zip-bomb-within.docx', content: docxBomb(within) },
  ];
}

/** One upload to its end: the synchronous answer, or (a file read in the background) its job's. */
async function uploadToEnd(url: string, key: string, endUser: string, file: { name: string; content: Buffer }) {
  const headers = { 'x-api-key': key, 'x-end-user-id': endUser };
  const form = new FormData();
  form.append('file', new Blob([file.content]), file.name);
  const res = await fetch(`${url}/memory/upload`, { method: 'POST', headers, body: form });
  const body = (await res.json()) as { job?: { id: number }; error?: { code: string; message: string } };
  if (res.status !== 202 || !body.job) return `${res.status}${body.error ? ` ${body.error.message}` : ''}`;
  for (;;) {
    await new Promise((r) => setTimeout(r, 100));
    const job = (await (await fetch(`${url}/memory/upload/${body.job.id}`, { headers })).json()) as {
      status: string;
      error?: string;
    };
    if (job.status === 'succeeded' || job.status === 'failed')
      return `job ${job.status}${job.error ? ` ${job.error}` : ''}`;
  }
}

export const scenario: FaultScenario = {
  name: 'hostile-uploads',
  description:
    'six bombs uploaded at once (flate-bomb PDF, page-count bomb PDF, zip-bomb DOCX; each past the default bounds and just within them): RSS peak over the baseline < 512 MB',
  databases: ['sqlite', 'postgres'],
  async inject(ctx) {
    const pid = ctx.server.process.pid!;
    const files = hostileFiles();
    const treeMb = () => processTree(pid).reduce((sum, p) => sum + rssMb(p), 0);
    const baseline = treeMb();
    const serverBaseline = rssMb(pid);
    let peak = baseline;
    let serverPeak = serverBaseline;
    // Sampled, so a peak shorter than SAMPLE_MS can be missed.
    const sampler = setInterval(() => {
      peak = Math.max(peak, treeMb());
      serverPeak = Math.max(serverPeak, rssMb(pid));
    }, SAMPLE_MS);
    try {
      const answers = await Promise.all(
        files.map((file, i) =>
          uploadToEnd(ctx.server.url, ctx.server.key, `hostile-${i}`, file).catch(
            (e: Error) => `no answer: ${e.message}`,
          ),
        ),
      );
      // Threads end and memory returns after; the peak is what was reached while reading.
      await ctx.sleep(500);
      return {
        rss_baseline_mb: Math.round(baseline),
        rss_peak_mb: Math.round(peak - baseline),
        server_process_rss_peak_mb: Math.round(serverPeak - serverBaseline),
        ...Object.fromEntries(files.map((f, i) => [`upload_${f.name}`, answers[i]!.slice(0, 160)])),
      };
    } finally {
      clearInterval(sampler);
    }
  },
};
