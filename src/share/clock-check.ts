/**
 * A MINT IS DATED BY THIS HOST'S CLOCK. A host whose clock is hours ahead mints a certificate
 * that is not valid yet for every node (its NotBefore is "now − 1 h" by the wrong clock), and the
 * fleet drops off the moment it is installed. Before minting, this host's clock is compared with
 * the store's (the `Date` of its last answer, src/store/store.ts `lastClockReading`): more than
 * a minute apart, the mint is refused, saying by how much. A store on this host's own clock (a
 * directory) gives no reading, and nothing is compared.
 */
import { BatonError } from '../errors.js';
import type { Clock } from '../authority/index.js';
import type { Store } from '../store/store.js';

export const CLOCK_TOLERANCE_MS = 60_000;

export function refuseClockOff(store: Store, clock: Clock): void {
  const reading = store.lastClockReading?.();
  if (!reading) return;
  // The store's time now: its Date, plus what has passed on this host's system clock since.
  const storeNow = reading.store.getTime() + (Date.now() - reading.local.getTime());
  const offset = clock.now().getTime() - storeNow;
  // The Date header has one-second precision: a second more is not skew.
  if (Math.abs(offset) <= CLOCK_TOLERANCE_MS + 1_000) return;
  throw new BatonError('refused', {
    what: `This host's clock is ${durationWords(Math.abs(offset))} ${offset > 0 ? 'ahead of' : 'behind'} the store's (${new Date(storeNow).toISOString()} by the store's Date, ${clock.now().toISOString()} here): a certificate minted now would ${offset > 0 ? 'not be valid yet for nodes on the right time' : 'carry the wrong dates'}. Minting is refused past a minute apart.`,
    where: store.location,
    changed: 'Nothing was minted or written.',
    next: "Fix this host's clock (timedatectl set-ntp true, or chronyc makestep), then run the command again.",
    reason: 'clock-off',
  });
}

function durationWords(ms: number): string {
  const minutes = Math.round(ms / 60_000);
  if (minutes < 120) return `about ${minutes} minute${minutes === 1 ? '' : 's'}`;
  return `about ${Math.round((ms / 3_600_000) * 10) / 10} hours`;
}
