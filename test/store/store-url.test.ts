import { describe, expect, it } from 'vitest';
import { BatonError } from '../../src/errors.js';
import { parseStoreUrl } from '../../src/store/store-url.js';

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

describe('store URLs', () => {
  it('puts the document of s3://bucket/prefix at prefix/authority.json, with the query overrides', () => {
    expect(
      parseStoreUrl(
        's3://my-bucket/team/prod/?region=eu-west-1&endpoint=https://s3.example.net&path_style=true&sse=aws:kms&kms_key_id=alias/baton',
      ),
    ).toEqual({
      kind: 's3',
      bucket: 'my-bucket',
      prefix: 'team/prod',
      key: 'team/prod/authority.json',
      region: 'eu-west-1',
      endpoint: 'https://s3.example.net',
      pathStyle: true,
      sse: 'aws:kms',
      kmsKeyId: 'alias/baton',
    });
  });

  it('puts the document at the bucket root when there is no prefix', () => {
    expect(parseStoreUrl('s3://my-bucket')).toMatchObject({
      bucket: 'my-bucket',
      prefix: '',
      key: 'authority.json',
      region: undefined,
      pathStyle: false,
    });
  });

  it('maps file:///dir to a directory store', () => {
    expect(parseStoreUrl('file:///var/lib/baton/store/')).toEqual({
      kind: 'file',
      dir: '/var/lib/baton/store',
    });
  });

  it.each([
    ['http://bucket/prefix', 'scheme "http"'],
    ['bucket/prefix', 'is not a URL'],
    ['s3://Bad_Bucket/p', 'not a valid S3 bucket name'],
    ['s3://bucket/p?regoin=eu-west-1', 'unknown parameter "regoin"'],
    ['s3://bucket/p?path_style=yes', 'path_style'],
    ['s3://bucket/p?sse=aws:kms&sse=AES256', 'more than once'],
    ['s3://bucket/p?kms_key_id=k', 'without sse=aws:kms'],
    ['s3://bucket/p?endpoint=ftp://x', 'not an http(s) URL'],
    ['s3://bucket/a/../b', '".."'],
    ['file://server/share', 'host "server"'],
    ['file:///', 'below /'],
    ['s3://bucket/a%zz', 'malformed'],
  ])('refuses %s as a usage error naming the URL (%s)', (url, reason) => {
    const error = usage(url);
    expect(error.what).toContain(reason);
    expect(error.next).toContain('s3://bucket/prefix');
  });
});
