/**
 * Status against S3: `baton status --json` against s3rver (the real SDK over HTTP on
 * 127.0.0.1) vs `aws s3api get-object` fetching the same object from the same endpoint — the
 * least a shell script could do to learn the same thing.
 */
import path from 'node:path';
import { startS3Sandbox } from '../../../src/sandbox/s3.js';
import { S3_TEST_ENV } from '../../helpers/run-baton.js';
import { publishAuthority } from '../lib/authority-fixture.js';
import { BIN, childEnv, type BenchCase } from '../lib/context.js';
import { figure } from '../lib/figure.js';
import { findAwsCli } from '../lib/find-aws.js';
import { describeTrace, traceLoads } from '../lib/load-trace.js';
import { summarize } from '../lib/stats.js';
import { interleaved } from '../lib/timed-process.js';

export const s3StatusCase: BenchCase = {
  name: 's3',
  async run(ctx) {
    const aws = findAwsCli(ctx.log);
    if ('missing' in aws) {
      return { figures: [], skipped: [{ id: 'status.s3', title: 'Status against S3', reason: aws.missing }] };
    }
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    const sandbox = await startS3Sandbox({
      dir: ctx.tempDir('s3rver'),
      bucket: 'baton-bench',
      prefix: 'fleet',
    });
    try {
      const env = { ...S3_TEST_ENV, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
      const published = await publishAuthority(ctx, sandbox.url, env);
      const out = path.join(ctx.tempDir('aws-out'), 'authority.json');
      const runs = Math.max(10, ctx.runs);
      ctx.log(`s3: ${runs} interleaved runs of status --json and ${aws.path} s3api get-object`);
      const result = await interleaved(
        {
          file: process.execPath,
          args: [BIN, ...published.flags, 'status', '--json'],
          env: childEnv(env),
          cwd: published.cwd,
        },
        {
          file: aws.path,
          args: [
            's3api',
            'get-object',
            '--bucket',
            sandbox.bucket,
            '--key',
            'fleet/authority.json',
            '--endpoint-url',
            sandbox.endpoint,
            out,
          ],
          // No config or credentials file of the machine: the same emulator keys baton gets.
          env: childEnv({
            ...S3_TEST_ENV,
            AWS_DEFAULT_REGION: 'us-east-1',
            AWS_CONFIG_FILE: '/dev/null',
            AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
          }),
        },
        {
          runs,
          check: (run) =>
            run.exitCode === 0 && run.stdout.includes(published.fingerprint)
              ? undefined
              : `exit ${run.exitCode}`,
        },
      );
      const failedBaseline = result.baseline.find((r) => r.exitCode !== 0);
      if (failedBaseline) throw new Error(`aws s3api get-object failed: ${failedBaseline.stderr.trim()}`);
      const trace = await traceLoads(
        process.execPath,
        [BIN, ...published.flags, 'status', '--json'],
        childEnv(env),
        published.cwd,
      );
      const wall = summarize(result.subject.map((r) => r.wallMs));
      const floor = summarize(result.baseline.map((r) => r.wallMs));
      return {
        figures: [
          figure({
            id: 'status.s3.vs-aws-cli',
            title: 'Status against S3 (s3rver): status --json vs aws s3api get-object',
            measured: { label: 'baton status --json', value: wall.median, unit: 'ms', summary: wall },
            baseline: { label: 'aws s3api get-object', value: floor.median, unit: 'ms', summary: floor },
            goal: { kind: 'ratio', max: 0.5 },
            notes: [
              `${runs} runs each, interleaved`,
              `aws CLI ${aws.version} at ${aws.path} (${aws.how})`,
              's3rver in the bench process on 127.0.0.1',
              describeTrace(trace),
            ],
          }),
        ],
        skipped: [],
      };
    } finally {
      await sandbox.close();
    }
  },
};
