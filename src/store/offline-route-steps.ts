/**
 * The offline route's commands as data (docs/publishing.md "When the store is down"), here so
 * the store's own "could not reach the store" failures can name them; src/share/offline-route.ts
 * is what carries the route out.
 */
import { nextStep, type NextStep, type Placeholder, type Said } from '../next-step.js';

const EXPORT_DIR: Placeholder = {
  placeholder: 'DIR',
  readFrom: 'an empty directory to write the document to (it becomes a file:// store)',
};
const EXPORT_URL: Placeholder = {
  placeholder: 'file:///DIR',
  readFrom: 'the exported directory, copied to this host (scp -r), as a file:// URL',
};

/** The export, run where the authority is held. */
export function exportStep(host = 'a host that holds the authority'): NextStep {
  return nextStep('ca export --to', { placeholders: [EXPORT_DIR], host });
}

/** The adopt from the copied export, run on the promoted host. */
export function adoptFromExportStep(): NextStep {
  return nextStep('sync --store', { placeholders: [EXPORT_URL] });
}

/** The route as the tail of a sentence, for every refusal that could not reach the store. */
export function offlineRoute(): Said {
  return [
    ' If the store stays down, the offline route: ',
    exportStep(),
    ', copy DIR to this host, then ',
    adoptFromExportStep(),
    ' (docs/publishing.md, "When the store is down").',
  ];
}
