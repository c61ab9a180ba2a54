import { expect, it } from 'vitest';
import { checkAddress, isPublicAddress, outboundRequest } from './outbound.js';

it('lets only public unicast addresses through, judging IPv4-mapped IPv6 as IPv4', () => {
  for (const address of [
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fd00:ec2::254',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
  ]) {
    expect(isPublicAddress(address), address).toBe(false);
  }
  for (const address of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
    expect(isPublicAddress(address), address).toBe(true);
});

it('allows listed hosts, addresses and CIDR ranges only', () => {
  const policy = { allow: ['127.0.0.1', '10.20.0.0/16', 'intranet.local'] };
  expect(() => checkAddress(policy, 'a', '127.0.0.1')).not.toThrow();
  expect(() => checkAddress(policy, 'a', '::ffff:127.0.0.1')).not.toThrow();
  expect(() => checkAddress(policy, 'a', '10.20.5.5')).not.toThrow();
  expect(() => checkAddress(policy, 'intranet.local', '192.168.0.9')).not.toThrow();
  expect(() => checkAddress(policy, 'a', '10.21.0.1')).toThrow(/non-public/);
  expect(() => checkAddress(policy, 'a', '127.0.0.2')).toThrow(/non-public/);
});

it('refuses before connecting, by literal address and by name', async () => {
  await expect(outboundRequest({ allow: [] }, 'http://127.0.0.1:9/')).rejects.toThrow(/non-public/);
  await expect(outboundRequest({ allow: [] }, 'http://[::1]:9/')).rejects.toThrow(/non-public/);
  await expect(outboundRequest({ allow: [] }, 'http://localhost:9/')).rejects.toThrow(/non-public/);
  await expect(outboundRequest({ allow: [] }, 'file:///etc/passwd')).rejects.toThrow(/http/);
});
