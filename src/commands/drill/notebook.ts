/**
 * What the drill notes before each task, so the checks after it compare with how the sandbox
 * really stood — "ctl-a was refused as left behind", "every old password", "every file on
 * every machine" — rather than with what a view claimed. Secrets noted here are the
 * consumers' copies, held as `Secret` (it prints as [secret]) for the login checks only.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { JOURNAL_FILE, type JournalRecord } from '../../mesh/journal.js';
import { look } from '../../share/actions.js';
import type { Look } from '../../share/types.js';
import { Secret } from '../../mesh/secret.js';
import { digestTree, readMeshFiles, type MeshFiles } from './machine-files.js';
import { DRILL_CONSUMERS, DRILL_PROVIDER, type DrillSandbox } from '../../sandbox/drill-layout.js';
import type { Controller } from '../../app/drill/scenario.js';

export type Role = (typeof DRILL_CONSUMERS)[number]['role'];

export interface Before {
  readonly looks: Readonly<Record<Controller, Look>>;
  readonly controllerFiles: Readonly<Record<Controller, Record<string, string>>>;
  readonly meshFiles: MeshFiles;
  /** Each consumer's delivered password (its machine's copy), if it has one. */
  readonly secrets: Readonly<Partial<Record<Role, Secret>>>;
  /** Records in the rotation journal, so a check can find the ones this task added. */
  readonly journalRecords: number;
  /** When the task opened (ms): the apps' log lines after it are the task's (app-checks.ts). */
  readonly at: number;
}

export interface Notebook {
  /** Set by `noteBefore` when a task opens. */
  before: Before | undefined;
}

export function newNotebook(): Notebook {
  return { before: undefined };
}

export async function noteBefore(sandbox: DrillSandbox, notebook: Notebook): Promise<Before> {
  const [a, b] = await Promise.all([look(sandbox.share('ctl-a')), look(sandbox.share('ctl-b'))]);
  const before: Before = {
    looks: { 'ctl-a': a, 'ctl-b': b },
    controllerFiles: {
      'ctl-a': digestTree(sandbox.stateDir('ctl-a')),
      'ctl-b': digestTree(sandbox.stateDir('ctl-b')),
    },
    meshFiles: readMeshFiles(sandbox),
    secrets: readConsumerSecrets(sandbox),
    journalRecords: readJournalRecords(sandbox).length,
    at: Date.now(),
  };
  notebook.before = before;
  return before;
}

/** The password each consumer would log in with now: the file the mesh delivered to its machine. */
export function readConsumerSecrets(sandbox: DrillSandbox): Partial<Record<Role, Secret>> {
  const out: Partial<Record<Role, Secret>> = {};
  for (const consumer of DRILL_CONSUMERS) {
    try {
      out[consumer.role] = Secret.fromText(
        readFileSync(sandbox.meshPath(consumer.machine, 'consumes', DRILL_PROVIDER, consumer.role), 'utf8'),
      );
    } catch {
      // No copy yet: the checks say so by name.
    }
  }
  return out;
}

/** Every record of the sandbox's rotation journal (names, results, digests — never secrets). */
export function readJournalRecords(sandbox: DrillSandbox): JournalRecord[] {
  let text: string;
  try {
    text = readFileSync(path.join(sandbox.journalDir, JOURNAL_FILE), 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as JournalRecord);
}
