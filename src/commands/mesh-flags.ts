/** The flags of `baton mesh plan | rotate | resume`, as commander hands them over. Apart from
 * mesh.ts so the runners it loads lazily read the type without importing their loader. */
export interface MeshFlags {
  /** Each selector flag may repeat: its values select their union. */
  readonly consumer?: string | readonly string[];
  readonly provider?: string | readonly string[];
  readonly machine?: string | readonly string[];
  readonly pair?: string | readonly string[];
  readonly inventory?: string;
  readonly concurrency: string;
  readonly timeout: string;
  readonly wait: string;
  readonly json?: boolean;
  readonly yes?: boolean;
  /** `mesh status --max-age 90d`: older pairs need action (exit 3). */
  readonly maxAge?: string;
  /** `mesh rotate --older-than 90d`: only the selected pairs older than this. */
  readonly olderThan?: string;
  /** `mesh rotate --revoke-previous`: revoke the logins alternating pairs' consumers left. */
  readonly revokePrevious?: boolean;
  /** `mesh rotate --end-sessions` (only with --revoke-previous): end those logins' sessions too. */
  readonly endSessions?: boolean;
  /** app-truth: `mesh rotate --app-behind CODE` (repeatable): the override codes of pairs whose app is behind. */
  readonly appBehind?: readonly string[];
}

/** The flags of `baton mesh seed`. */
export interface MeshSeedFlags {
  readonly pair: string;
  readonly fromFile: string;
  readonly inventory?: string;
  readonly timeout: string;
}
