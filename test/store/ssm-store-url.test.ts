/**
 * ssm:///<prefix> URLs (billet's Parameter Store), the at-rest words status shows for them,
 * the refusal of baton's own seal on SSM, and that only an ssm:// URL loads the SSM SDK.
 */
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { BatonError } from '../../src/errors.js';
import { openShareContext } from '../../src/share/share-context.js';
import { classifySsmError, etagOf } from '../../src/store/ssm-store.js';
import { parseStoreUrl, storeAtRestSeal } from '../../src/store/store-url.js';
import { batonErrorOf } from '../helpers/baton-error.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';

const tmp = makeTempDir('baton-ssm-url-');
afterAll(() => tmp.cleanup());

function usage(url: string): BatonError {
  try {
    parseStoreUrl(url);
  } catch (error) {
    expect(error).toBeInstanceOf(BatonError);
    expect((error as BatonError).code).toBe('usage');
    expect((error as BatonError).where).toBe(url);
    return error as BatonError;
  }
  throw new Error(`expected ${url} to be refused`);
}

describe('ssm:/// store URLs', () => {
  it("names billet's parameter <prefix>/node-wire-authority, with the S3 URL's overrides", () => {
    expect(
      parseStoreUrl(
        'ssm:///billet/prod?endpoint=http://127.0.0.1:5000&region=us-east-1&kms_key_id=alias/billet',
      ),
    ).toEqual({
      kind: 'ssm',
      prefix: '/billet/prod',
      name: '/billet/prod/node-wire-authority',
      region: 'us-east-1',
      endpoint: 'http://127.0.0.1:5000',
      kmsKeyId: 'alias/billet',
    });
    // Region, credentials and endpoint otherwise come from the SDK chain (AWS_ENDPOINT_URL_SSM).
    expect(parseStoreUrl('ssm:///billet/prod/')).toMatchObject({
      name: '/billet/prod/node-wire-authority',
      region: undefined,
      endpoint: undefined,
      kmsKeyId: undefined,
    });
    expect(parseStoreUrl('ssm:///')).toMatchObject({ prefix: '', name: '/node-wire-authority' });
  });

  it.each([
    ['ssm://billet/prod', 'names a host'],
    ['ssm:///billet/../prod', '"." or ".."'],
    ['ssm:///billet//prod', 'empty'],
    ['ssm:///billet/pr od', 'letters, digits, . - _ only'],
    ['ssm:///aws/billet', 'reserves'],
    ['ssm:///billet?sse=aws:kms', 'unknown parameter "sse" (known for ssm: region, endpoint, kms_key_id)'],
    ['ssm:///billet?path_style=true', 'unknown parameter "path_style"'],
    ['ssm:///billet?region=a&region=b', '"region" more than once'],
    ['ssm:///billet?endpoint=ftp://x', 'not an http(s) URL'],
  ])('refuses %s as a usage error naming what is wrong and the forms it takes', (url, words) => {
    const error = usage(url);
    expect(error.what).toContain(words);
    expect(error.next).toContain('ssm:///prefix');
  });

  it('status says what seals the document at rest on SSM, and nothing for S3 or a directory', () => {
    expect(storeAtRestSeal('ssm:///billet/prod')).toBe(
      "KMS: a SecureString under alias/aws/ssm (the account's default key)",
    );
    expect(storeAtRestSeal('ssm:///billet/prod?kms_key_id=alias/billet')).toBe(
      'KMS: a SecureString under the key alias/billet',
    );
    expect(storeAtRestSeal('s3://bucket/p')).toBeUndefined();
    expect(storeAtRestSeal('file:///srv/store')).toBeUndefined();
    expect(storeAtRestSeal('not a url')).toBeUndefined();
  });

  it('the ETag of a parameter is its version, quoted', () => {
    expect(etagOf(7)).toBe('"7"');
  });

  it('classifies a stall of the whole call by the call and the time baton waited, and AWS errors by name', () => {
    const denied = classifySsmError(
      Object.assign(new Error('no'), { name: 'AccessDeniedException', $metadata: { httpStatusCode: 400 } }),
      'ssm:///b/node-wire-authority',
      'write',
      { name: '/b/node-wire-authority', kmsKeyId: undefined, endpoint: undefined },
    );
    expect(denied).toMatchObject({ code: 'failed', reason: 'denied', changed: 'Nothing was written.' });
    expect(denied.next).toContain('ssm:PutParameter');
    const noCreds = classifySsmError(
      Object.assign(new Error('x'), { name: 'CredentialsProviderError' }),
      'w',
      'read',
    );
    expect(noCreds.reason).toBe('no-credentials');
    const refused = classifySsmError(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }), 'w', 'read');
    expect(refused.reason).toBe('unreachable');
    expect(refused.next).toContain('AWS_ENDPOINT_URL_SSM');
  });
});

describe("baton's own seal on SSM", () => {
  it('is refused before anything is read or written: billet could not read a sealed document', async () => {
    const key = path.join(tmp.dir, 'seal.key');
    writeFileSync(key, Buffer.alloc(32, 7), { mode: 0o600 });
    const config = loadConfig(
      {
        deployment: 'ef56ef56ef56ef56ef56ef56ef56ef56',
        stateDir: path.join(tmp.dir, 'state'),
        // An endpoint nothing listens on: a request would fail differently, after a connect.
        store: 'ssm:///billet/prod?region=us-east-1&endpoint=http://127.0.0.1:9',
        sealKeyFile: key,
      },
      {},
      tmp.dir,
    );
    const error = await batonErrorOf(openShareContext(config));
    expect(error).toMatchObject({ code: 'config', exitCode: 2 });
    expect(error.what).toContain('seal_key_file is set, but the store is SSM Parameter Store');
    expect(error.what).toContain('billet');
    expect(error.next).toContain('kms_key_id');
    expect(error.changed).toBe('Nothing was read or written.');
    expect(existsSync(path.join(tmp.dir, 'state'))).toBe(false);
  });

  it('without a seal key, the SSM store states the seal itself (KMS): no "seal: none" is needed', async () => {
    const config = loadConfig(
      {
        deployment: 'ef56ef56ef56ef56ef56ef56ef56ef56',
        stateDir: path.join(tmp.dir, 'state2'),
        store: 'ssm:///billet/prod?region=us-east-1&endpoint=http://127.0.0.1:9',
      },
      {},
      tmp.dir,
    );
    const ctx = await openShareContext(config);
    expect(ctx.noSeal).toBe(true);
    expect(ctx.store.location).toBe('ssm:///billet/prod/node-wire-authority');
    expect(ctx.store.atRestSeal?.()).toContain('KMS');
  });
});
