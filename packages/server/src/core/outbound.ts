import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * The SSRF guard for every request the server makes to a URL a customer gave (crawled pages,
 * object-storage endpoints, webhook receivers): the host is resolved, every address is checked,
 * and the connection goes to the checked address (the check is the socket's DNS lookup, so a
 * second resolution cannot swap in another address). Only public unicast addresses pass:
 * loopback, private, link-local (cloud metadata at 169.254.169.254), CGNAT, multicast, unspecified,
 * reserved and IPv4-mapped forms of these are refused unless the allow-list names the host, the
 * address or a CIDR range containing it (ENGRAM_OUTBOUND_ALLOW). Redirects are followed only
 * through the same check.
 */

export class OutboundRefused extends Error {}

export interface OutboundPolicy {
  /** Host names, addresses or CIDR ranges that may be reached even though they are not public. */
  allow: string[];
}

export interface OutboundResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** The URL that answered, after redirects. */
  url: string;
}

export interface OutboundRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: Buffer;
  /** Bodies longer than this are cut off with an error (default 50 MiB). */
  maxBytes?: number;
  timeoutMs?: number;
  /** Redirects followed (default 5; 0 returns the 3xx itself). */
  maxRedirects?: number;
}

function allowed(policy: OutboundPolicy, host: string, address: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  for (const entry of policy.allow) {
    if (entry.toLowerCase() === host.toLowerCase()) return true;
    try {
      if (entry.includes('/')) {
        const [range, bits] = ipaddr.parseCIDR(entry);
        if (range.kind() === address.kind() && address.match([range, bits] as never)) return true;
      } else if (ipaddr.isValid(entry) && ipaddr.parse(entry).toNormalizedString() === address.toNormalizedString())
        return true;
    } catch {
      // an entry that is neither a host nor an address never matches
    }
  }
  return false;
}

/** Whether an address is public unicast; IPv4-mapped IPv6 is judged as the IPv4 address it carries. */
export function isPublicAddress(value: string): boolean {
  let address = ipaddr.parse(value);
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress())
    address = (address as ipaddr.IPv6).toIPv4Address();
  return address.range() === 'unicast';
}

/** Throws OutboundRefused unless `address` (resolved from `host`) may be reached under the policy. */
export function checkAddress(policy: OutboundPolicy, host: string, value: string): void {
  let address = ipaddr.parse(value);
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress())
    address = (address as ipaddr.IPv6).toIPv4Address();
  if (address.range() === 'unicast' || allowed(policy, host, address)) return;
  throw new OutboundRefused(`${host} resolves to a non-public address (${address.range()}); refused`);
}

function guardedLookup(policy: OutboundPolicy, host: string): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[] | string) => {
      if (error) return callback(error, '', 0);
      const list = addresses as LookupAddress[];
      try {
        if (list.length === 0) throw new OutboundRefused(`${host} does not resolve`);
        for (const a of list) checkAddress(policy, host, a.address);
      } catch (refused) {
        return callback(refused as NodeJS.ErrnoException, '', 0);
      }
      if ((options as { all?: boolean }).all)
        return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
      return callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

function once(policy: OutboundPolicy, url: URL, request: OutboundRequest): Promise<OutboundResponse> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return Promise.reject(new OutboundRefused('Only http and https URLs are fetched'));
  const host = url.hostname.replace(/^\[|\]$/g, '');
  // A literal address never reaches the lookup, so it is checked here.
  if (isIP(host)) {
    try {
      checkAddress(policy, host, host);
    } catch (error) {
      return Promise.reject(error);
    }
  }
  const maxBytes = request.maxBytes ?? 50 * 1024 * 1024;
  return new Promise((resolve, reject) => {
    const client = url.protocol === 'https:' ? https : http;
    const req = client.request(
      url,
      {
        method: request.method ?? 'GET',
        headers: request.headers ?? {},
        lookup: guardedLookup(policy, host),
        timeout: request.timeoutMs ?? 30_000,
      },
      (res) => {
        const parts: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) {
            req.destroy(new Error(`The response from ${url.host} is larger than ${maxBytes} bytes`));
            return;
          }
          parts.push(chunk);
        });
        res.on('end', () => {
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(res.headers))
            if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
          resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(parts), url: url.toString() });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${url.host} did not answer in time`)));
    req.on('error', reject);
    req.end(request.body);
  });
}

/** One request through the guard, following redirects (each hop checked again). */
export async function outboundRequest(
  policy: OutboundPolicy,
  target: string | URL,
  request: OutboundRequest = {},
): Promise<OutboundResponse> {
  let url = new URL(target);
  for (let hop = 0; ; hop++) {
    const response = await once(policy, url, request);
    const location = response.headers.location;
    if (
      response.status < 300 ||
      response.status >= 400 ||
      response.status === 304 ||
      !location ||
      hop >= (request.maxRedirects ?? 5)
    )
      return response;
    url = new URL(location, url);
  }
}
