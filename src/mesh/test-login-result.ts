/**
 * What a test login answered, on its own so the pooler step (pooler-remote.ts), which reload.ts
 * carries, can say it without importing the login itself (test-login.ts imports reload.ts).
 */
export type TestLoginResult =
  | { readonly ok: true; readonly ms: number; readonly roundTrips?: number }
  | {
      readonly ok: false;
      readonly ms: number;
      /** The server's own words (or the network's), raw: shown only through outside-text. */
      readonly reason: string;
      /** PostgreSQL's SQLSTATE when the server refused (28000: pg_hba or NOLOGIN, 28P01, 53300…). */
      readonly code?: string;
      readonly roundTrips?: number;
      /** Refused before the login was tried: a pooler baton keeps could not be given the verifier (pooler-remote.ts). */
      readonly poolerStep?: true;
    };
