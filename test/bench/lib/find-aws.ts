/**
 * The AWS CLI the S3 baseline runs. A pyenv shim is resolved to the real script first: the
 * shim's own bash-and-pyenv hop would be charged to the baseline and flatter baton. When no
 * CLI is found and this is a Debian-like machine run as root, Debian's awscli is installed.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export interface AwsCli {
  readonly path: string;
  readonly version: string;
  /** How it was found, for the notes. */
  readonly how: string;
}

function onPath(name: string): string | undefined {
  const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() || undefined : undefined;
}

function versionOf(file: string): string | undefined {
  const run = spawnSync(file, ['--version'], {
    encoding: 'utf8',
    env: { ...process.env, AWS_CONFIG_FILE: '/dev/null' },
  });
  return run.status === 0 ? `${run.stdout}${run.stderr}`.trim().split(/\s+/)[0] : undefined;
}

export function findAwsCli(log: (line: string) => void): AwsCli | { readonly missing: string } {
  let candidate =
    onPath('aws') ?? (existsSync('/root/.pyenv/shims/aws') ? '/root/.pyenv/shims/aws' : undefined);
  let how = 'on PATH';
  if (candidate?.includes('/.pyenv/shims/')) {
    try {
      candidate = execFileSync('pyenv', ['which', 'aws'], { encoding: 'utf8' }).trim();
      how = 'pyenv which aws (the shim resolved)';
    } catch {
      how = 'pyenv shim';
    }
  }
  if (!candidate && process.getuid?.() === 0 && onPath('apt-get')) {
    log('aws CLI missing: apt-get install -y awscli');
    const install = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'awscli'], {
      encoding: 'utf8',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    if (install.status === 0) {
      candidate = onPath('aws');
      how = "Debian's awscli, installed by the bench";
    }
  }
  if (!candidate)
    return { missing: 'no aws CLI on PATH and it could not be installed (apt-get install awscli, as root)' };
  const version = versionOf(candidate);
  if (!version) return { missing: `${candidate} --version failed` };
  return { path: candidate, version, how };
}
