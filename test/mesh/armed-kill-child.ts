/**
 * A baton that dies (SIGKILL) right after arming a consumer commit on the rename channel and
 * sending its test login's last flight — before it reads the verdict (app-truth-postgres.test.ts).
 * Reads its request as JSON on stdin (the role's password among it: never in argv), prints
 * `armed` once the arm is sent, and kills itself the instant the login's client-final is written.
 */
import { scramLogin } from '../../src/mesh/scram-login.js';
import type { SshTarget } from '../../src/mesh/inventory.js';
import { sshTransport } from '../../src/transport/ssh-transport.js';

interface Request {
  readonly target: SshTarget;
  readonly host: string;
  readonly port: number;
  readonly path: string;
  readonly reload: string;
  readonly user: string;
  readonly password: string;
}

let text = '';
for await (const chunk of process.stdin) text += (chunk as Buffer).toString();
const request = JSON.parse(text) as Request;
const life = new AbortController();
const channel = await sshTransport('web3', request.target).openChannel!(life.signal);
const socket = await channel.relay!.openSocket(request.host, request.port, life.signal);
void socket.arm([request.path], [{ command: request.reload, env: {}, timeoutMs: 10_000 }]);
process.stdout.write('armed\n');
let writes = 0;
const write = socket.write.bind(socket) as (chunk: Buffer) => boolean;
socket.write = ((chunk: Buffer) => {
  const written = write(chunk);
  // The first write is the startup and client-first; the second the client-final (the proof).
  if (++writes === 2) setImmediate(() => process.kill(process.pid, 'SIGKILL'));
  return written;
}) as typeof socket.write;
await scramLogin(
  socket,
  {
    user: request.user,
    database: 'postgres',
    applicationName: 'baton test login',
    password: request.password,
  },
  life.signal,
);
// Not reached: the process is gone before the verdict.
process.exit(9);
