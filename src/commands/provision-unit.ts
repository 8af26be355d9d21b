/**
 * `baton provision unit` (docs/provisioner-service.md): prints the systemd unit the package
 * ships, contrib/baton-provision@.service, with ExecStart naming the Node and the bin/baton.js
 * that ran it. An npm install puts baton where its prefix says, so a unit that assumed a path
 * (/usr/bin/baton) named a file no install creates; absolute paths also spare the unit a
 * PATH on which `#!/usr/bin/env node` finds the right Node.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { BatonError } from '../errors.js';
import { action, type CliContext } from './context.js';

export const UNIT_FILE = 'contrib/baton-provision@.service';

/** The shipped unit's command line up to the subcommand: what this baton's paths replace. */
const EXEC_START = /^ExecStart=\S+ \S+ (?=provision postgres )/m;

/**
 * A word for an ExecStart line: `%` doubled (systemd's specifiers), and quoted as systemd
 * unquotes it when it holds a space, a quote or a backslash.
 */
export function systemdWord(word: string): string {
  const escaped = word.replace(/%/g, '%%');
  return /^[A-Za-z0-9_./+@:%=,-]+$/.test(escaped)
    ? escaped
    : `"${escaped.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** The shipped unit with ExecStart running `bin` under `node`. */
export function unitFor(template: string, node: string, bin: string): string {
  if (!EXEC_START.test(template))
    throw new BatonError('failed', {
      what: `${UNIT_FILE} has no "ExecStart=<node> <baton.js> provision postgres" line to fill in.`,
      next: 'This is a bug in the package: reinstall baton, or write ExecStart by hand.',
    });
  return template.replace(EXEC_START, `ExecStart=${systemdWord(node)} ${systemdWord(bin)} `);
}

/** Adds `unit` to the `provision` command `program` registered; `root` is the package's folder. */
export function registerProvisionUnit(program: Command, ctx: CliContext, root: URL): void {
  const provision = program.commands.find((command) => command.name() === 'provision');
  if (provision === undefined)
    throw new Error('registerProvisionUnit: the provision command is not registered');
  provision
    .command('unit')
    .description(
      `print the systemd unit for the provisioner (${UNIT_FILE}) with ExecStart naming this Node and this baton`,
    )
    .action(
      action(ctx, () => {
        const template = readFileSync(new URL(UNIT_FILE, root), 'utf8');
        ctx.stdout.write(unitFor(template, process.execPath, fileURLToPath(new URL('bin/baton.js', root))));
      }),
    );
}
