import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { until } from '../../testing/until.js';

const MAIN = fileURLToPath(new URL('../../main.ts', import.meta.url));

it('engram webhooks listen prints deliveries and verifies their signatures', async () => {
  const secret = `whsec_${Buffer.from('a-listen-test-secret-24b').toString('base64')}`;
  // Port 0: the OS picks one no other process holds, and the receiver names it.
  const child = spawn(process.execPath, [
    '--import',
    'tsx',
    MAIN,
    'webhooks',
    'listen',
    '--port',
    '0',
    '--secret',
    secret,
  ]);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  try {
    const port = await until(
      () => /listening for webhooks on http:\/\/127\.0\.0\.1:(\d+)\//.exec(stderr)?.[1],
      'the receiver to listen',
    );
    const body = JSON.stringify({
      type: 'webhook.test',
      timestamp: new Date().toISOString(),
      data: { endpoint_id: 1, message: 'hi' },
    });
    const signature = new Webhook(secret).sign('msg_listen1', new Date(), body);
    const headers = {
      'content-type': 'application/json',
      'webhook-id': 'msg_listen1',
      'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
      'webhook-signature': signature,
    };
    const good = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', headers, body });
    expect(good.status).toBe(200);
    const forged = await fetch(`http://127.0.0.1:${port}/`, {
      method: 'POST',
      headers,
      body: body.replace('hi', 'ho'),
    });
    expect(forged.status).toBe(401);
    await until(() => stdout.includes('INVALID'), 'both deliveries printed');
    expect(stdout).toContain('webhook-id=msg_listen1 type=webhook.test signature: valid');
    expect(stdout).toContain('"message": "hi"');
  } finally {
    child.kill();
  }
  const usage = spawn(process.execPath, ['--import', 'tsx', MAIN, 'webhooks', 'listen']);
  expect(await new Promise((resolve) => usage.on('exit', resolve))).toBe(2);
});
