/**
 * How far a new authority's NotBefore is set before the moment it is minted: a controller whose
 * clock runs behind a node's must not present a "not yet valid" CA. Screens that show NotBefore
 * say so, or an overlap seems to start an hour before the rotation that made it.
 */
export const NOT_BEFORE_BACKDATE_MS = 3_600_000;
