/** OIDs and fixed names of an authority certificate (docs/authority-on-disk.md), billet's own. */
export const OID = {
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  organizationalUnit: '2.5.4.11',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  subjectKeyIdentifier: '2.5.29.14',
} as const;

/** billet's CN: an authority baton mints must be one billet's wirecert loads as its own. */
export const AUTHORITY_COMMON_NAME = 'billet node wire CA';

/** The OU claim a rotated authority carries: `billet-replaces:<fingerprint it replaces>`. */
export const REPLACES_PREFIX = 'billet-replaces:';

/**
 * The claim baton wrote before it matched billet: still READ, so an authority baton rotated
 * earlier keeps proving its predecessor; never written.
 */
export const LEGACY_REPLACES_PREFIX = 'baton-replaces:';
