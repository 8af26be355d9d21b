/**
 * What `status` loads to read both sides, as ONE lazily imported module: a dynamic import per
 * piece gave the bundle a chunk per piece, and each file a cold start opens costs more than
 * its bytes (npm run bench, "Start-up").
 */
export { openStore } from '../store/open-store.js';
export { readStatus, statusExitCode } from '../app/status-report.js';
export { statusSources } from '../app/status-sources.js';
export { batonInvocation } from '../app/status-invocation.js';
export { statusJson } from '../app/status-json.js';
