/**
 * The test login of a command that moves a consumer after the rotation that made its
 * credential has ended — `mesh resume` renaming a consumer end after its receipt, `mesh
 * rollback` finishing a pair whose receipt shows the new password (issue 45: the test login is
 * never skipped). That rotation's memory is gone, so the new credential is read back from the
 * pair's provider end on its machine, the file the database was given, and used only if its
 * digest is the one the rotation prepared: a file changed since is not tried, and the pair does
 * not move. The secret stays in this process's memory for the login and is never kept.
 */
import { groupBy, type ConsumerGate } from './delivery.js';
import type { SecretDigest } from './digest.js';
import { mapBounded } from './map-bounded.js';
import type { AppHooks } from './reload.js';
import { loginThroughPooler } from './pooler-remote.js';
import type { PlannedPair } from './rotation-plan.js';
import { Secret } from './secret.js';
import { testLogin, testLoginRecord, type TestLoginRecord } from './test-login.js';
import { reasonOf, type TransportFor } from './transport.js';

export interface MachineLogins {
  /** For the receipt wait (`mesh resume`): the pairs of a batch that must not move. */
  readonly gate: ConsumerGate;
  /** For the roll-back (`mesh rollback`, rollback.ts `loginFirst`): the pairs that must not move. */
  loginFirst(pairs: readonly PlannedPair[]): Promise<ReadonlySet<string>>;
  /** Every login tried so far, as the journal and the summary keep them. */
  records(): readonly TestLoginRecord[];
}

export function loginsFromMachines(
  hooks: AppHooks,
  /** The rotation's provider-end digests by pair (what the receipt confirmed). */
  digests: Readonly<Record<string, SecretDigest>>,
  transportFor: TransportFor,
  concurrency: number,
): MachineLogins {
  const tried: TestLoginRecord[] = [];
  /** Tries each pair whose provider names `connect:`; resolves with the records of those tried. */
  const tryPairs = async (pairs: readonly PlannedPair[]): Promise<TestLoginRecord[]> => {
    const withConnect = pairs.filter((p) => hooks.connectOf(p.provider));
    const secrets = await readProviderEnds(withConnect, digests, transportFor, concurrency);
    const records = await Promise.all(
      withConnect.map(async (pair): Promise<TestLoginRecord> => {
        const login = pair.login?.role ?? pair.role;
        const secret = secrets.get(pair.key)!;
        const connect = hooks.connectOf(pair.provider)!;
        const result =
          secret instanceof Secret
            ? await loginThroughPooler(
                hooks.pooler,
                { pair, connect, digest: secret.digest, transportFor },
                () => testLogin(transportFor(pair.consumerMachine), connect, login, secret.reveal()),
              )
            : { ok: false as const, ms: 0, reason: secret.reason };
        return testLoginRecord(pair, login, connect, result);
      }),
    );
    tried.push(...records);
    return records;
  };
  return {
    gate: async (batch) => ({
      refused: (await tryPairs(batch))
        .filter((r) => !r.ok)
        .map((r) => ({ pair: r.pair, reason: r.reason ?? '', ...(r.code ? { code: r.code } : {}) })),
    }),
    async loginFirst(pairs) {
      return new Set((await tryPairs(pairs)).filter((r) => !r.ok).map((r) => r.pair));
    },
    records: () => [...tried],
  };
}

/** Each pair's new credential from its provider's live file, or why it cannot be tried. */
async function readProviderEnds(
  pairs: readonly PlannedPair[],
  digests: Readonly<Record<string, SecretDigest>>,
  transportFor: TransportFor,
  concurrency: number,
): Promise<Map<string, Secret | { readonly reason: string }>> {
  const out = new Map<string, Secret | { readonly reason: string }>();
  await mapBounded(
    [...groupBy(pairs, (p) => p.providerMachine)],
    concurrency,
    async ([machine, machinePairs]) => {
      try {
        // readTexts carries the file's text over the machine's own ssh session, as stage carried it there.
        const texts = await transportFor(machine).readTexts(machinePairs.map((p) => p.providerPath));
        machinePairs.forEach((p, i) => out.set(p.key, secretOf(texts[i], digests[p.key], p, machine)));
      } catch (error) {
        for (const p of machinePairs)
          out.set(p.key, {
            reason: `the new credential could not be read on ${machine} (${reasonOf(error)})`,
          });
      }
    },
  );
  return out;
}

function secretOf(
  text: string | undefined,
  digest: SecretDigest | undefined,
  pair: PlannedPair,
  machine: string,
): Secret | { readonly reason: string } {
  const notPrepared = {
    reason: `${machine}: ${pair.providerPath} no longer holds the credential the rotation prepared, so it cannot be tried`,
  };
  if (text === undefined) return notPrepared;
  try {
    const secret = Secret.fromText(text);
    return secret.digest === digest ? secret : notPrepared;
  } catch {
    return notPrepared;
  }
}
