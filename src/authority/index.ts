/**
 * The public face of the authority on disk (docs/authority-on-disk.md). Everything outside src/authority
 * imports from here: the rules (src/share), the flows (src/app) and the commands.
 *
 * Locking: readAuthorityFiles, installAuthority and setAsideAuthority expect the CALLER to
 * hold ca.lock (withAuthorityLock), so one decision can read, decide and write under one lock.
 * rotateAuthority and retireAuthority take the lock THEMSELVES (they are whole operations);
 * called inside withAuthorityLock they fail with 'lock-busy', like any second holder.
 * snapshotLocalAuthority takes no lock and writes nothing.
 */
export type {
  AuthorityFiles,
  AuthorityFileName,
  LocalAuthority,
  LocalProblem,
  PairSummary,
} from './types.js';
export { AUTHORITY_FILES } from './types.js';
export { systemClock, type Clock } from './clock.js';
export { readLocalAuthority, snapshotLocalAuthority } from './read-local-authority.js';
export { probeAuthorityLock, withAuthorityLock, type AuthorityLockProbe } from './authority-lock.js';
export { readAuthorityFiles } from './read-authority-files.js';
export { checkPair } from './check-pair.js';
export { mintAuthority } from './mint-authority.js';
export { installAuthority } from './install-authority.js';
export { setAsideAuthority, supersededDirFor, utcStamp } from './set-aside-authority.js';
export { readSetAsideAuthorities, type SetAsideAuthority } from './set-aside-authorities.js';
export { markerDeployment } from './write-marker.js';
export { rotateAuthority, type RotateResult } from './rotate-authority.js';
export { retireAuthority, unprovedRefusal, type RetireResult } from './retire-authority.js';
export { layoutOf, type AuthorityLayout } from './layout.js';
export type { StepHook } from '../fs/durable-write.js';
export { interruptedOf, type Interrupted } from './interrupted.js';
export { restorePreviousCertificate, restorePreviousCertificateLocked } from './restore-previous.js';
