/**
 * Which delivered files may have changed since the last scan, so an idle poll at thousands of
 * roles does not stat every one of them. Two witnesses, each covering the other's blind spot:
 * - the directory's own stat (inode, mtime, ctime) moves whenever a name is added, removed or
 *   renamed over — the mesh's atomic commit — but NOT when a file is rewritten in place;
 * - an inotify watch on the directory (fs.watch) names the file of every change, in-place
 *   rewrites and chmods included.
 * What neither can vouch for is scanned in full: the first scan, a watch that could not start or
 * failed, a directory replaced (another inode: the watch sees the old one), a burst of events
 * large enough that the kernel's queue may have overflowed (libuv drops the overflow marker, so
 * a lost event would go unseen), and at least every FULL_SCAN_MS whatever both say.
 */
import { watch, type FSWatcher, type Stats } from 'node:fs';
import { readFileSync } from 'node:fs';

/** Every file is stat'd at least this often: the backstop for anything both witnesses missed. */
export const FULL_SCAN_MS = 60_000;

/**
 * Above any kernel's timestamp granularity: a directory changed this recently may change again
 * in the same tick without its stat moving ("racy clean", as in delivered-credentials.ts).
 */
const RACY_MS = 25;

/**
 * More events than this between two scans and the watch is not trusted for that scan: the
 * kernel queue (fs.inotify.max_queued_events, 16384 by default) holds at most that many before
 * it drops the rest, so a count below half of it proves nothing was dropped.
 */
function eventBudget(): number {
  try {
    const queued = Number(readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8').trim());
    if (Number.isFinite(queued) && queued > 0) return Math.max(1, Math.min(4_096, Math.floor(queued / 2)));
  } catch {
    // not Linux, or /proc unreadable: the default queue's half
  }
  return 4_096;
}

/** What the next scan must look at. */
export type ScanPlan =
  /** Stat every file (and read those whose stat moved). */
  | { readonly kind: 'full' }
  /** List the directory again; stat only new names and these. */
  | { readonly kind: 'names'; readonly changed: ReadonlySet<string> }
  /** Nothing changed: the last scan's result holds. */
  | { readonly kind: 'none' };

export class DirChanges {
  private watcher: FSWatcher | undefined;
  /** The inode the watch was started on; another inode is another directory. */
  private watchedIno: number | undefined;
  private broken = false;
  private changed = new Set<string>();
  private events = 0;
  /** An event without a file name (the kernel did not say which). */
  private unnamed = false;
  private lastStamp: string | undefined;
  private lastFullAt = Number.NEGATIVE_INFINITY;
  private readonly budget = eventBudget();

  constructor(
    private readonly dir: string,
    /** Names whose change matters (the others — dotfiles, staged files — are never read by a scan). */
    private readonly matters: (name: string) => boolean,
  ) {}

  /**
   * Resolves after the event loop has polled once, so an event the kernel queued for a write
   * made before this call has reached the watch: two immediates always have a poll phase
   * between them, wherever in the loop this is called from. Every watch of the process hears
   * its events in that poll, not only this one's.
   */
  async settled(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  /**
   * The plan for a scan about to start, given the directory's stat now; `scanned` is called
   * when that scan is done (its events are then accounted for).
   */
  plan(st: Stats, now: number): ScanPlan {
    this.ensureWatch(st);
    const stamp = `${st.ino}:${st.mtimeMs}:${st.ctimeMs}`;
    if (!this.watcher || this.unnamed || this.events > this.budget || now - this.lastFullAt >= FULL_SCAN_MS)
      return { kind: 'full' };
    if (stamp === this.lastStamp && this.changed.size === 0) return { kind: 'none' };
    return { kind: 'names', changed: new Set(this.changed) };
  }

  /**
   * The scan of `plan` is done. A scan is synchronous, so no event arrived during it: every
   * event so far is accounted for, and the directory's stat is the one it was planned on.
   */
  scanned(plan: ScanPlan, st: Stats, now: number): void {
    if (plan.kind === 'full') this.lastFullAt = now;
    this.changed.clear();
    this.events = 0;
    this.unnamed = false;
    // A directory changed in this very tick is listed again next time.
    this.lastStamp =
      Date.now() - Math.max(st.mtimeMs, st.ctimeMs) > RACY_MS
        ? `${st.ino}:${st.mtimeMs}:${st.ctimeMs}`
        : undefined;
  }

  /** The directory is gone or unreadable: the watch goes with it; the next scan that works is full. */
  lost(): void {
    this.close();
    this.broken = false;
    this.lastStamp = undefined;
    this.lastFullAt = Number.NEGATIVE_INFINITY;
  }

  close(): void {
    this.watcher?.close();
    this.watcher = undefined;
    this.watchedIno = undefined;
  }

  private ensureWatch(st: Stats): void {
    if (this.watcher && this.watchedIno === st.ino) return;
    // Another inode under the same name: what the old watch saw says nothing about it.
    this.close();
    this.lastFullAt = Number.NEGATIVE_INFINITY;
    if (this.broken) return;
    try {
      const watcher = watch(this.dir, { persistent: false }, (_event, name) => {
        this.events += 1;
        if (name === null) this.unnamed = true;
        else if (this.matters(name)) this.changed.add(name);
      });
      watcher.on('error', () => {
        // A watch that failed is never trusted again in this process: every scan is full.
        this.broken = true;
        this.close();
      });
      this.watcher = watcher;
      this.watchedIno = st.ino;
      this.changed.clear();
      this.events = 0;
      this.unnamed = false;
    } catch {
      // No inotify (ENOSPC: the user's watch limit; EMFILE): every scan is full, as before.
      this.broken = true;
    }
  }
}
