/**
 * The receipts directory as one poll needs it: which receipts exist, and each one's content,
 * at the cost of one `stat` of the directory per poll while nothing changed there. A mesh
 * roll-back removes a receipt and a stray hand may replace one — both change the directory —
 * so the listing is re-read only when the directory's own stat moved, and then a receipt is
 * re-read only when its own stat moved. At 5,000 roles an idle poll then costs no `exists`
 * per role (there were up to three) and no receipt read at all. When the directory did change —
 * this provisioner's own receipts after an apply, mostly — only the receipts an inotify watch
 * named are stat'd again (dir-changes.ts: the same two witnesses as the delivered files, and a
 * full pass when either cannot vouch), not every receipt of the provider.
 */
import { readdirSync, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import type { Receipt } from '../mesh/digest.js';
import { readReceipt, receiptsDir } from './receipts.js';
import { DirChanges } from './dir-changes.js';

function stampOf(st: Stats): string {
  return `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
}

export class ReceiptIndex {
  readonly dir: string;
  private names = new Set<string>();
  /** Whether the directory was listed since it (re)appeared: the first listing stats every receipt. */
  private listedOnce = false;
  private readonly changes: DirChanges;
  /**
   * role → its receipt (null: unreadable) and the file's stamp when read or written; `stale`
   * once the file's stamp moved (read again on the next get).
   */
  private readonly content = new Map<
    string,
    { readonly receipt: Receipt | null; readonly stamp: string; readonly stale?: boolean }
  >();

  constructor(private readonly deliveredDir: string) {
    this.dir = receiptsDir(deliveredDir);
    // Temp receipts are dotfiles: listed, never read as receipts.
    this.changes = new DirChanges(this.dir, (name) => !name.startsWith('.'));
  }

  /** Stops watching the directory; a later refresh starts again in full. */
  close(): void {
    this.changes.lost();
    this.listedOnce = false;
  }

  /** Once per poll: lists the directory again only if it changed since the last listing. */
  refresh(): void {
    let st: Stats | undefined;
    try {
      st = statSync(this.dir, { throwIfNoEntry: false });
    } catch {
      st = undefined;
    }
    if (!st) {
      this.names = new Set();
      this.listedOnce = false;
      this.content.clear();
      this.changes.lost();
      return;
    }
    const now = Date.now();
    const planned = this.changes.plan(st, now);
    const plan = this.listedOnce ? planned : ({ kind: 'full' } as const);
    if (plan.kind === 'none') {
      this.changes.scanned(plan, st, now);
      return;
    }
    try {
      this.names = new Set(readdirSync(this.dir));
    } catch {
      this.names = new Set();
    }
    for (const role of this.content.keys()) {
      if (!this.names.has(role)) {
        this.content.delete(role);
        continue;
      }
      if (plan.kind === 'names' && !plan.changed.has(role)) continue;
      // A receipt replaced by another hand has a stamp of its own.
      const cached = this.content.get(role)!;
      const file = statSync(path.join(this.dir, role), { throwIfNoEntry: false });
      if (!file) this.content.delete(role);
      else if (stampOf(file) !== cached.stamp) this.content.set(role, { ...cached, stale: true });
    }
    this.changes.scanned(plan, st, now);
    this.listedOnce = true;
  }

  /** Every name in the directory at the last listing (receipts and temp files). */
  listed(): ReadonlySet<string> {
    return this.names;
  }

  /** The receipt for `role` (undefined: none, or unreadable — "not applied"), read at most once per change. */
  get(role: string): Receipt | undefined {
    if (!this.names.has(role)) return undefined;
    const cached = this.content.get(role);
    if (cached && !cached.stale) return cached.receipt ?? undefined;
    const file = statSync(path.join(this.dir, role), { throwIfNoEntry: false });
    if (!file) return undefined;
    // Only an absent receipt counts as removed: one that cannot be read keeps what this process
    // knew (it is reported when the provisioner cannot write it, not taken as "never applied").
    const receipt = readReceipt(this.deliveredDir, role) ?? cached?.receipt ?? null;
    this.content.set(role, { receipt, stamp: stampOf(file) });
    return receipt ?? undefined;
  }

  /** This process wrote `receipt` (writeReceipt): kept as it is, with the file's new stamp. */
  wrote(receipt: Receipt): void {
    this.names.add(receipt.role);
    const file = statSync(path.join(this.dir, receipt.role), { throwIfNoEntry: false });
    if (file) this.content.set(receipt.role, { receipt, stamp: stampOf(file) });
    else this.content.delete(receipt.role);
  }

  /** This process removed `role`'s receipt (or a temp file). */
  removed(name: string): void {
    this.names.delete(name);
    this.content.delete(name);
  }
}
