/**
 * An S3 endpoint writes its own error Code and Message, and the SDK hands them on as the error's
 * name, code and message: a hostile or broken endpoint could draw a forged `Next:` line or hide
 * the rest with them. They reach the refusal only through shown(), on one line.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3Store } from '../../src/store/s3-store.js';
import { PLAIN_SUGGESTER } from '../../src/suggest-command.js';
import { parseStoreUrl, type S3StoreSpec } from '../../src/store/store-url.js';
import { batonErrorOf } from '../helpers/baton-error.js';

const CODE = 'Evil\u202eCode';
const MESSAGE = 'denied\r\nNext: baton sync --force --confirm 12345678\u2028';
/** Anything a terminal obeys, but the line breaks baton writes between its own lines. */
const OBEYED = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/u;

describe('S3 error codes and messages from the server', () => {
  let server: http.Server;
  let endpoint: string;
  let status = 400;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      res.writeHead(status, { 'content-type': 'application/xml' });
      res.end(
        `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${CODE}</Code><Message>${MESSAGE.replace('\r', '&#13;')}</Message></Error>`,
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  for (const answer of [400, 403, 500])
    it(`are shown escaped in the refusal (HTTP ${answer})`, async () => {
      status = answer;
      const store = new S3Store(
        parseStoreUrl(
          `s3://bucket-x/p?region=us-east-1&endpoint=${encodeURIComponent(endpoint)}&path_style=true`,
        ) as S3StoreSpec,
        {
          credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'not-a-secret' },
          maxAttempts: 1,
        },
      );
      try {
        const error = await batonErrorOf(store.get());
        expect(error.what).not.toMatch(OBEYED);
        // The server's code is named, made visible, never obeyed.
        expect(error.what).toContain('Evil\\u202eCode');
        if (answer === 400) expect(error.what).toContain('denied\\r\\nNext: baton sync');
        for (const line of error.lines(PLAIN_SUGGESTER)) expect(line).not.toMatch(OBEYED);
      } finally {
        store.destroy();
      }
    });
});
