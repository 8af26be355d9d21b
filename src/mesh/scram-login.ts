/**
 * baton's own PostgreSQL login for the test login (test-login.ts), cut to the round trips the
 * protocol requires (docs/mesh-rotation.md "What the test login and the reload cost"). A general client
 * (pg) waits for each answer before it speaks: startup → the server's SASL offer, client-first
 * → server-first, client-final → ok — three round trips. Here the StartupMessage and the
 * SASLInitialResponse leave together (the client-first message carries no password, only a
 * nonce), so the login costs TWO round trips, and two is SCRAM's floor: the client's proof is
 * an HMAC over the server's nonce and the role's salt, which only the server-first message
 * carries, and the startup cannot go out earlier because PostgreSQL reads the role's verifier
 * when authentication starts — before the receipt, that is the OLD password.
 *
 * Sending the SASLInitialResponse unasked assumes the server wants SCRAM-SHA-256, PostgreSQL's
 * default and the only method for a role whose verifier is SCRAM (as the provisioner stores
 * them; `md5` in pg_hba.conf then means SCRAM). Where pg_hba.conf says `password` (clear
 * text) the server reads that message as a wrong password and logs one failed authentication
 * before baton refuses to go on; where it says `trust` it logs a protocol error after the login
 * succeeded. Either way the verdict is the same as a client that asked first: refused without
 * the password ever sent, or accepted.
 */
import type { Duplex } from 'node:stream';

export type WireLoginResult =
  | { readonly ok: true; readonly roundTrips: number }
  | {
      readonly ok: false;
      /** The server's own words (or baton's, naming the method it refused), raw. */
      readonly reason: string;
      readonly code?: string;
      readonly roundTrips: number;
    };

export interface WireLoginRequest {
  readonly user: string;
  readonly database: string;
  readonly applicationName: string;
  readonly password: string;
  /**
   * One simple query sent once logged in (pooler-remote.ts: `RELOAD` on a pgbouncer admin
   * console); the verdict is then its answer: ReadyForQuery after it is ok, an ErrorResponse
   * refuses with the server's words.
   */
  readonly query?: string;
}

const PROTOCOL_3_0 = 196608;
const MECHANISM = 'SCRAM-SHA-256';
/** More iterations than this is a server making baton burn CPU, not a verifier baton would store. */
const MAX_ITERATIONS = 100_000;

/** An error the server sent or the exchange broke on; `code` is PostgreSQL's SQLSTATE. */
class LoginRefused extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

function cstring(text: string): Buffer {
  return Buffer.concat([Buffer.from(text, 'utf8'), Buffer.from([0])]);
}

function startupMessage(user: string, database: string, applicationName: string): Buffer {
  const body = Buffer.concat([
    cstring('user'),
    cstring(user),
    cstring('database'),
    cstring(database),
    cstring('application_name'),
    cstring(applicationName),
    Buffer.from([0]),
  ]);
  const head = Buffer.alloc(8);
  head.writeInt32BE(body.length + 8, 0);
  head.writeInt32BE(PROTOCOL_3_0, 4);
  return Buffer.concat([head, body]);
}

/** A typed frontend message: one byte of type, an int32 length, the body. */
function message(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

function saslInitialResponse(clientFirst: string): Buffer {
  const data = Buffer.from(clientFirst, 'utf8');
  const length = Buffer.alloc(4);
  length.writeInt32BE(data.length, 0);
  return message('p', Buffer.concat([cstring(MECHANISM), length, data]));
}

/** The fields of an ErrorResponse: M (message) and C (SQLSTATE) are the ones kept. */
function errorFields(body: Buffer): { message: string; code?: string } {
  const fields = new Map<string, string>();
  let at = 0;
  while (at < body.length && body[at] !== 0) {
    const type = String.fromCharCode(body[at]!);
    const end = body.indexOf(0, at + 1);
    if (end < 0) break;
    fields.set(type, body.toString('utf8', at + 1, end));
    at = end + 1;
  }
  const code = fields.get('C');
  return {
    message: fields.get('M') ?? 'the server refused the login without a message',
    ...(code && /^[0-9A-Z]{5}$/.test(code) ? { code } : {}),
  };
}

/** RFC 5802 attribute pairs (`r=…,s=…,i=…`). */
function attributes(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of text.split(',')) {
    const eq = part.indexOf('=');
    if (eq === 1) out.set(part[0]!, part.slice(2));
  }
  return out;
}

interface Scram {
  readonly clientFirstBare: string;
  readonly nonce: string;
}

async function scramStart(): Promise<Scram> {
  const { randomBytes } = await import('node:crypto');
  const nonce = randomBytes(18).toString('base64');
  // The user name is in the startup message; PostgreSQL ignores the SCRAM one.
  return { clientFirstBare: `n=*,r=${nonce}`, nonce };
}

/** The client-final message and the server signature to expect, from the server-first message. */
async function scramContinue(
  scram: Scram,
  serverFirst: string,
  password: string,
): Promise<{ clientFinal: string; serverSignature: string }> {
  const { createHash, createHmac, pbkdf2 } = await import('node:crypto');
  const attrs = attributes(serverFirst);
  const nonce = attrs.get('r');
  const salt = attrs.get('s');
  const iterations = Number(attrs.get('i'));
  if (!nonce || !salt || !Number.isInteger(iterations) || iterations < 1)
    throw new LoginRefused('the server sent a SCRAM challenge baton cannot read');
  if (!nonce.startsWith(scram.nonce) || nonce.length === scram.nonce.length)
    throw new LoginRefused("the server's SCRAM nonce does not extend baton's");
  if (iterations > MAX_ITERATIONS)
    throw new LoginRefused(
      `the server asked for ${iterations} SCRAM iterations (baton allows ${MAX_ITERATIONS})`,
    );
  const withoutProof = `c=biws,r=${nonce}`;
  const authMessage = `${scram.clientFirstBare},${serverFirst},${withoutProof}`;
  // SASLprep's mapping as PostgreSQL applies it when it stores the verifier (a generated secret is ASCII).
  const prepared = password.replace(/[\u00A0\u1680\u2000-\u200B\u202F\u205F\u3000]/g, ' ').normalize('NFKC');
  const salted = await new Promise<Buffer>((resolve, reject) =>
    pbkdf2(prepared, Buffer.from(salt, 'base64'), iterations, 32, 'sha256', (error, key) =>
      error ? reject(error) : resolve(key),
    ),
  );
  const hmac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest();
  const clientKey = hmac(salted, 'Client Key');
  const storedKey = createHash('sha256').update(clientKey).digest();
  const signature = hmac(storedKey, authMessage);
  const proof = Buffer.from(clientKey.map((b, i) => b ^ signature[i]!)).toString('base64');
  const serverSignature = hmac(hmac(salted, 'Server Key'), authMessage).toString('base64');
  return { clientFinal: `${withoutProof},p=${proof}`, serverSignature };
}

/**
 * Logs in on `stream` (already connected, or buffering until it is) and ends the session at
 * once. Resolves with the verdict; rejects only when the stream breaks or `signal` aborts.
 * Success is ReadyForQuery, not AuthenticationOk: NOLOGIN, a role's CONNECTION LIMIT and the
 * database's CONNECT privilege are checked after the password.
 */
export async function scramLogin(
  stream: Duplex,
  request: WireLoginRequest,
  signal: AbortSignal,
): Promise<WireLoginResult> {
  const scram = await scramStart();
  // It may have failed while nobody read it (a refused connect while the nonce was drawn).
  if (stream.destroyed) throw stream.errored ?? new Error('the connection closed before the login');
  let roundTrips = 1;
  let buffered = Buffer.alloc(0);
  let authenticated = false;
  let queried = false;
  let serverSignature: string | undefined;
  /** `more`: data came while a message was being handled, so the buffer is read again after it. */
  const reading = { busy: false, more: false };
  return new Promise<WireLoginResult>((resolve, reject) => {
    let settled = false;
    const finish = (result: WireLoginResult | Error) => {
      if (settled) return;
      settled = true;
      stream.off('data', onData);
      stream.off('error', onError);
      stream.off('close', onClose);
      signal.removeEventListener('abort', onAbort);
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    const refuse = (reason: string, code?: string) =>
      finish({ ok: false, reason, ...(code ? { code } : {}), roundTrips });
    const onError = (error: Error) => finish(error);
    const onClose = () => finish(new Error('the server closed the connection during the login'));
    const onAbort = () => finish(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    /** Reads every whole message in the buffer; the SCRAM steps are async, so one at a time. */
    const drain = async (): Promise<void> => {
      if (reading.busy) {
        reading.more = true;
        return;
      }
      reading.busy = true;
      reading.more = false;
      try {
        while (!settled && buffered.length >= 5) {
          const length = buffered.readInt32BE(1);
          if (length < 4 || length > 1 << 20) return refuse('the server sent a message baton cannot read');
          if (buffered.length < 1 + length) break;
          const type = String.fromCharCode(buffered[0]!);
          const body = buffered.subarray(5, 1 + length);
          buffered = buffered.subarray(1 + length);
          if (type === 'E') {
            const fields = errorFields(body);
            return refuse(fields.message, fields.code);
          }
          if (type === 'Z') {
            if (!authenticated) return refuse('the server was ready before it authenticated the login');
            if (request.query !== undefined && !queried) {
              queried = true;
              roundTrips += 1;
              stream.write(message('Q', cstring(request.query)));
              continue;
            }
            stream.end(message('X', Buffer.alloc(0)));
            return finish({ ok: true, roundTrips });
          }
          if (type !== 'R') continue; // ParameterStatus, BackendKeyData, NoticeResponse
          const kind = body.readInt32BE(0);
          const data = body.subarray(4);
          switch (kind) {
            case 0:
              if (serverSignature !== undefined)
                return refuse('the server accepted the login without proving it knows the verifier');
              authenticated = true;
              break;
            case 10: {
              const offered = data.toString('utf8').split('\0').filter(Boolean);
              if (!offered.includes(MECHANISM))
                return refuse(
                  `the server offers ${offered.join(', ') || 'no SASL mechanism'}, not ${MECHANISM}`,
                );
              break;
            }
            case 11: {
              const next = await scramContinue(scram, data.toString('utf8'), request.password);
              serverSignature = next.serverSignature;
              roundTrips += 1;
              stream.write(message('p', Buffer.from(next.clientFinal, 'utf8')));
              break;
            }
            case 12: {
              const v = attributes(data.toString('utf8')).get('v');
              if (v === undefined || v !== serverSignature)
                return refuse("the server's SCRAM signature does not match: it does not hold this password");
              serverSignature = undefined;
              break;
            }
            case 3:
            case 5:
              return refuse(
                `the server asked for the password ${kind === 3 ? 'in clear' : 'as MD5'}; baton tries logins only with SCRAM`,
              );
            default:
              return refuse(`the server asked for an authentication baton does not speak (${kind})`);
          }
        }
      } catch (error) {
        if (error instanceof LoginRefused) return refuse(error.message, error.code);
        finish(error as Error);
      } finally {
        reading.busy = false;
      }
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- set by onData while the SCRAM step awaited
      if (!settled && reading.more) void drain();
    };
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      void drain();
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    stream.on('data', onData);
    stream.on('error', onError);
    stream.on('close', onClose);
    // One flight: the startup and the client-first message (no password in it) together.
    stream.write(
      Buffer.concat([
        startupMessage(request.user, request.database, request.applicationName),
        saslInitialResponse(`n,,${scram.clientFirstBare}`),
      ]),
    );
  });
}
