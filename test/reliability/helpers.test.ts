/**
 * The breaking tools are tested before they are trusted: a fault proxy that silently forwards
 * everything, or a scanner that finds nothing, would make every suite built on them pass
 * for the wrong reason.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFaultProxy, type FaultProxy } from '../helpers/fault-proxy.js';
import { keyMaterial, scanForSecrets } from '../helpers/secret-scan.js';

describe('fault proxy', () => {
  let upstream: http.Server;
  let proxy: FaultProxy;
  const received: string[] = [];

  beforeAll(async () => {
    upstream = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push(`${req.method} ${req.url} ${Buffer.concat(chunks).toString()}`);
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('hello from upstream, a body long enough to be cut in half');
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    proxy = await startFaultProxy({
      upstream: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
      maxStallMs: 5_000,
    });
  });
  afterAll(async () => {
    await proxy.close();
    await new Promise((resolve) => upstream.close(resolve));
  });

  const get = (path: string, timeoutMs = 10_000) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.get(`${proxy.url}${path}`, { timeout: timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
        res.on('aborted', () => reject(new Error('aborted')));
      });
      req.on('timeout', () => req.destroy(new Error('client timeout')));
      req.on('error', reject);
    });

  it('forwards untouched requests to the upstream', async () => {
    const answer = await get('/bucket/key');
    expect(answer).toEqual({
      status: 200,
      body: 'hello from upstream, a body long enough to be cut in half',
    });
    expect(received.at(-1)).toBe('GET /bucket/key ');
  });

  it('answers 500 and 503 SlowDown with S3 XML bodies for exactly the armed count', async () => {
    proxy.arm({ fault: 'http-500', count: 1 });
    proxy.arm({ fault: 'slow-down', count: 2 });
    const before = received.length;
    const first = await get('/b/k');
    const second = await get('/b/k');
    const third = await get('/b/k');
    const fourth = await get('/b/k');
    expect(first.status).toBe(500);
    expect(first.body).toContain('<Code>InternalError</Code>');
    expect([second.status, third.status]).toEqual([503, 503]);
    expect(second.body).toContain('<Code>SlowDown</Code>');
    expect(fourth.status).toBe(200);
    expect(received.length - before).toBe(1);
  });

  it('resets the connection without reaching the upstream', async () => {
    const before = received.length;
    proxy.arm({ fault: 'reset', path: /^\/reset/ });
    await expect(get('/reset/me')).rejects.toThrow(/ECONNRESET|socket hang up/);
    expect(received.length).toBe(before);
  });

  it('sends a truncated body after forwarding, which the client sees as a short read', async () => {
    const before = received.length;
    proxy.arm({ fault: 'truncate' });
    await expect(get('/cut')).rejects.toThrow(/aborted|ECONNRESET|socket hang up/);
    expect(received.length).toBe(before + 1);
  });

  it('stalls until the client gives up, and only matching methods get the fault', async () => {
    proxy.arm({ fault: 'stall', method: 'PUT' });
    expect((await get('/not-a-put')).status).toBe(200);
    proxy.clear();
    proxy.arm({ fault: 'stall', method: 'GET' });
    await expect(get('/slow', 300)).rejects.toThrow(/client timeout/);
    expect(proxy.count('stall')).toBe(1);
  });
});

describe('secret scan', () => {
  const secret = randomBytes(32);
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  const secrets = [{ name: 'mesh secret', value: secret }, ...keyMaterial('ca.key', pem)];

  it('finds a secret raw, in hex of either case, and in base64 at any offset inside a longer stream', () => {
    for (let pad = 0; pad < 3; pad += 1) {
      const wrapped = Buffer.concat([randomBytes(pad + 5), secret, randomBytes(7)]).toString('base64');
      const lines = wrapped.replace(/(.{16})/g, '$1\n');
      expect(scanForSecrets([{ name: `b64-${pad}`, data: lines }], secrets).map((h) => h.secret)).toContain(
        'mesh secret',
      );
    }
    expect(
      scanForSecrets([{ name: 'hex', data: `x=${secret.toString('hex').toUpperCase()}` }], secrets),
    ).toHaveLength(1);
    expect(
      scanForSecrets([{ name: 'raw', data: Buffer.concat([Buffer.from('PW='), secret]) }], secrets).length,
    ).toBeGreaterThan(0);
  });

  it('finds key material by its PEM header, its DER bytes and its private scalar', () => {
    const hits = scanForSecrets([{ name: 'log', data: `oops ${pem}` }], secrets);
    expect(hits.map((h) => h.secret)).toEqual(expect.arrayContaining(['PEM private key', 'ca.key (DER)']));
    const d = privateKey.export({ format: 'jwk' }).d!;
    expect(scanForSecrets([{ name: 'jwk', data: `{"d":"${d}"}` }], secrets).map((h) => h.secret)).toContain(
      'ca.key (private scalar)',
    );
  });

  it('reports nothing for text that holds no secret', () => {
    const noise = `${randomBytes(4096).toString('base64')}\n${randomBytes(4096).toString('hex')}\nsha256:${randomBytes(32).toString('hex')}`;
    expect(scanForSecrets([{ name: 'noise', data: noise }], secrets)).toEqual([]);
  });
});
