/** OIDs and fixed names of a baton authority certificate (DESIGN.md §4). */
export const OID = {
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  organizationalUnit: '2.5.4.11',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  subjectKeyIdentifier: '2.5.29.14',
} as const;

export const AUTHORITY_COMMON_NAME = 'baton node wire CA';

/** The OU claim a rotated authority carries: `baton-replaces:<fingerprint it replaces>`. */
export const REPLACES_PREFIX = 'baton-replaces:';
