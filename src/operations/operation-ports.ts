/**
 * What every mesh operation is given by its command: the inventory, the journal it writes
 * history to, the transports (built by the command, closed by the operation), who runs it,
 * how its commands are suggested and where its lines go. An operation decides nothing about
 * flags or terminals; a command decides nothing about the sequence.
 */
import path from 'node:path';
import { BatonError } from '../errors.js';
import { errorCode } from '../fs/system-error.js';
import type { Inventory } from '../mesh/inventory.js';
import { readJournalHistory, type JournalHistory } from '../mesh/journal-history.js';
import { JOURNAL_FILE } from '../mesh/journal.js';
import type { TransportFor } from '../mesh/transport.js';
import type { Suggester } from '../suggest-command.js';

export interface OperationJournal {
  readonly dir: string;
  /** The mesh's identity in it (meshIdentities' first). */
  readonly mesh: string;
  /** Ids an older baton wrote this mesh's records under (derived from the machine list). */
  readonly aliases?: readonly string[];
}

export interface OperationTransports {
  readonly transportFor: TransportFor;
  /** Ends every connection; the operation calls it once it is done with the machines. */
  close(): Promise<void>;
}

export interface OperationPorts {
  readonly inventory: Inventory;
  readonly journal: OperationJournal;
  /** Opened by the command, once; the operation closes them. */
  readonly transports: OperationTransports;
  readonly operator: string;
  readonly suggester: Suggester;
  /** One line of output (dropped by the command once its output is gone). */
  readonly out: (line: string) => void;
}

/** This mesh's history in the journal, or a refusal naming the journal (nothing is read from any holder). */
export async function meshHistory(journal: OperationJournal): Promise<JournalHistory> {
  try {
    return await readJournalHistory(journal.dir, [journal.mesh, ...(journal.aliases ?? [])]);
  } catch (error) {
    throw new BatonError('failed', {
      what: `The rotation journal could not be read (${errorCode(error)}).`,
      where: path.join(journal.dir, JOURNAL_FILE),
      next: 'Pass the --state-dir / journal_dir the rotations use, or make the journal readable.',
      changed: 'Nothing was generated and nothing was sent.',
      cause: error,
    });
  }
}

/** Runs `fn`, then closes the transports however it ended. */
export async function closingAfter<T>(transports: OperationTransports, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } finally {
    await transports.close();
  }
}
