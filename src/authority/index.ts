/**
 * The public face of the authority on disk (DESIGN.md §4). Everything outside src/authority
 * imports from here: the rules (src/share), the flows (src/app) and the commands.
 */
export type { AuthorityFiles, AuthorityFileName, LocalAuthority, LocalProblem, PairSummary } from './types.js';
export { AUTHORITY_FILES } from './types.js';
export { systemClock, type Clock } from './clock.js';
export { readLocalAuthority, snapshotLocalAuthority } from './read-local-authority.js';
export { withAuthorityLock } from './authority-lock.js';
export { readAuthorityFiles } from './read-authority-files.js';
export { checkPair } from './check-pair.js';
export { mintAuthority } from './mint-authority.js';
export { installAuthority } from './install-authority.js';
export { setAsideAuthority, utcStamp } from './set-aside-authority.js';
export { rotateAuthority, type RotateResult } from './rotate-authority.js';
export { retireAuthority, type RetireResult } from './retire-authority.js';
export { layoutOf, type AuthorityLayout } from './layout.js';
export type { StepHook } from './durable-write.js';
