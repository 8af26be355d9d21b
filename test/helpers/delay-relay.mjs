#!/usr/bin/env node
/**
 * A network with a round trip, for ssh's ProxyCommand: `node delay-relay.mjs HOST PORT MS [LOG]`
 * connects to HOST:PORT and forwards stdin to it and it to stdout, holding every chunk MS ms in
 * each direction (a 2×MS round trip), in order. LOG, if given, gets a line per connection (a
 * test checks its ssh really went through the relay). Plain JavaScript so ssh can start it.
 */
import { appendFileSync } from 'node:fs';
import net from 'node:net';

const [host, port, ms, log] = process.argv.slice(2);
if (log) appendFileSync(log, `${host}:${port} +${ms} ms\n`);
const delay = Number(ms ?? 0);
const socket = net.connect({ host, port: Number(port) });
socket.setNoDelay(true);
/** Chunks leave in arrival order: timers of one delay fire in the order they were set. */
const forward = (from, to) => {
  from.on('data', (chunk) => setTimeout(() => to.write(chunk), delay));
  from.on('end', () => setTimeout(() => to.end(), delay));
};
forward(process.stdin, socket);
forward(socket, process.stdout);
socket.on('error', (error) => {
  process.stderr.write(`delay-relay: ${host}:${port}: ${error.message}\n`);
  process.exit(1);
});
socket.on('close', () => setTimeout(() => process.exit(0), delay + 5));
process.stdout.on('error', () => process.exit(0));
