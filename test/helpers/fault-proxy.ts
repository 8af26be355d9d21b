/**
 * An HTTP proxy on 127.0.0.1 (random port) in front of an upstream S3 endpoint (s3rver) that
 * answers the faults a real S3 gives during an outage: 500, 503 SlowDown, a reset connection, a
 * truncated body, a response that stalls past the client's timeout. A test arms faults for
 * the next N matching requests (or for all of them) and reads back what each request got, so
 * "retried within bounds" is a count, not a guess.
 *
 * BOUNDED AND SELF-STOPPING: a stall is held at most `maxStallMs`, and the proxy closes itself
 * after `lifetimeMs`, so a test that forgets `close()` cannot hang the run.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type Fault =
  /** 500 InternalError with an S3 XML body; the upstream never sees the request. */
  | 'http-500'
  /** 503 SlowDown with an S3 XML body (throttling); the upstream never sees the request. */
  | 'slow-down'
  /** TCP reset as soon as the request headers arrive; the upstream never sees the request. */
  | 'reset'
  /**
   * The request IS forwarded (a PUT takes effect upstream); the response claims a
   * Content-Length larger than what is sent, then the connection closes.
   */
  | 'truncate'
  /** No answer at all until the client gives up (or `maxStallMs`); never forwarded. */
  | 'stall'
  /**
   * Forwarded; the upstream's headers are sent with the whole Content-Length, then the first
   * `bodyBytes` of the body (default half of it), then silence until the client gives up (or
   * `maxStallMs`): a store or proxy that stops mid-answer.
   */
  | 'stall-body'
  /**
   * Forwarded untouched, but the answer's ETag header is replaced by a fresh random one: a
   * gateway that gives the same bytes a different ETag on every answer.
   */
  | 'rewrite-etag'
  /** Forwarded untouched after `delayMs`: a slow store, to hold an operation mid-flight. */
  | 'delay'
  /** Forwarded WITHOUT its If-Match header: a proxy or gateway that drops the precondition. */
  | 'drop-if-match'
  /** Forwarded WITHOUT its If-None-Match header: a proxy that drops the create-only precondition. */
  | 'drop-if-none-match'
  /**
   * The request IS forwarded and applied upstream; its response is dropped (the connection
   * closes with no answer): a lost response, which the SDK retries.
   */
  | 'drop-response'
  /**
   * An AWS JSON-protocol error (SSM, KMS): `error`'s status and `__type`; never forwarded.
   * Match it to one action with `target` (the X-Amz-Target suffix, e.g. 'PutParameter').
   */
  | 'aws-json-error';

export interface FaultRule {
  readonly fault: Fault;
  /** Only requests whose method matches (e.g. 'GET', 'PUT'); default any. */
  readonly method?: string;
  /** Only requests whose path matches; default any. */
  readonly path?: RegExp;
  /** How many matching requests get the fault; `Infinity` for all of them. Default 1. */
  readonly count?: number;
  /** For 'delay': how long to hold the request before forwarding it. Default 500 ms. */
  readonly delayMs?: number;
  /** For 'stall-body': how many body bytes are sent before the silence. Default half the body. */
  readonly bodyBytes?: number;
  /** Only requests whose X-Amz-Target ends with `.<target>` (AWS JSON APIs: every call is POST /). */
  readonly target?: string;
  /** For 'aws-json-error': what to answer. */
  readonly error?: { readonly status: number; readonly type: string; readonly message?: string };
}

export interface ProxiedRequest {
  readonly method: string;
  readonly url: string;
  /** The fault it got, or 'forwarded' when it went to the upstream untouched. */
  readonly outcome: Fault | 'forwarded';
  /** Request headers as received (lower-case names). */
  readonly headers: http.IncomingHttpHeaders;
}

export interface FaultProxy {
  readonly port: number;
  /** http://127.0.0.1:<port> — use it as the S3 endpoint. */
  readonly url: string;
  /** Every request seen, in arrival order. */
  readonly requests: ProxiedRequest[];
  /** Arms a fault; rules are matched in the order they were armed. */
  arm(rule: FaultRule): void;
  /** Removes every armed rule (requests pass through again). */
  clear(): void;
  /** Requests that got `outcome` (or any fault when omitted). */
  count(outcome?: ProxiedRequest['outcome'] | 'fault'): number;
  close(): Promise<void>;
}

export interface FaultProxyOptions {
  /** The upstream, e.g. http://127.0.0.1:4568. */
  readonly upstream: string;
  /** Longest a stalled request is held before its socket is destroyed. Default 30 s. */
  readonly maxStallMs?: number;
  /** The proxy closes itself after this long. Default 10 min. */
  readonly lifetimeMs?: number;
}

interface ArmedRule {
  readonly fault: Fault;
  readonly delayMs: number;
  readonly bodyBytes: number | undefined;
  readonly method: string | undefined;
  readonly path: RegExp | undefined;
  readonly target: string | undefined;
  readonly error: FaultRule['error'];
  remaining: number;
}

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const upstream = new URL(options.upstream);
  const maxStallMs = options.maxStallMs ?? 30_000;
  const rules: ArmedRule[] = [];
  const requests: ProxiedRequest[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const agent = new http.Agent({ keepAlive: false });

  const take = (req: http.IncomingMessage): ArmedRule | undefined => {
    const pathname = (req.url ?? '/').split('?')[0]!;
    for (const rule of rules) {
      if (rule.remaining <= 0) continue;
      if (rule.method && rule.method !== req.method) continue;
      if (rule.path && !rule.path.test(pathname)) continue;
      if (rule.target && !String(req.headers['x-amz-target'] ?? '').endsWith(`.${rule.target}`)) continue;
      rule.remaining -= 1;
      return rule;
    }
    return undefined;
  };

  const server = http.createServer((req, res) => {
    const rule = take(req);
    const fault = rule?.fault;
    requests.push({
      method: req.method ?? '?',
      url: req.url ?? '/',
      outcome: fault ?? 'forwarded',
      headers: { ...req.headers },
    });
    switch (fault) {
      case 'http-500':
        return drainThen(req, () =>
          s3Error(res, 500, 'InternalError', 'We encountered an internal error. Please try again.', req.url),
        );
      case 'slow-down':
        return drainThen(req, () =>
          s3Error(res, 503, 'SlowDown', 'Please reduce your request rate.', req.url),
        );
      case 'reset':
        req.socket.resetAndDestroy();
        return;
      case 'aws-json-error':
        return drainThen(req, () => {
          const error = rule!.error ?? { status: 400, type: 'AccessDeniedException' };
          const body = Buffer.from(
            JSON.stringify({ __type: error.type, message: error.message ?? `${error.type} (fault-proxy)` }),
          );
          res.writeHead(error.status, {
            'content-type': 'application/x-amz-json-1.1',
            'content-length': String(body.length),
            'x-amzn-requestid': 'fault-proxy',
          });
          res.end(body);
        });
      case 'stall': {
        // Hold the socket open, read nothing more, answer nothing: the client's own timeout
        // is what must fire. Bounded so a client without one cannot hang the test run.
        const timer = setTimeout(() => {
          timers.delete(timer);
          req.socket.destroy();
        }, maxStallMs);
        timer.unref();
        timers.add(timer);
        req.socket.once('close', () => {
          clearTimeout(timer);
          timers.delete(timer);
        });
        return;
      }
      case 'truncate':
        return forward(req, res, true);
      case 'stall-body':
        return forward(req, res, false, false, rule!.bodyBytes ?? 'half');
      case 'rewrite-etag':
        return forward(req, res, false, false, undefined, true);
      case 'drop-if-match':
        delete req.headers['if-match'];
        return forward(req, res, false);
      case 'drop-if-none-match':
        delete req.headers['if-none-match'];
        return forward(req, res, false);
      case 'drop-response':
        return forward(req, res, false, true);
      case 'delay': {
        req.pause();
        const timer = setTimeout(() => {
          timers.delete(timer);
          forward(req, res, false);
        }, rule!.delayMs);
        timers.add(timer);
        return;
      }
      case undefined:
        return forward(req, res, false);
    }
  });

  /** Holds `socket` open and silent, at most `maxStallMs`. */
  const holdSilent = (socket: Socket) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      socket.destroy();
    }, maxStallMs);
    timer.unref();
    timers.add(timer);
    socket.once('close', () => {
      clearTimeout(timer);
      timers.delete(timer);
    });
  };

  const forward = (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    truncate: boolean,
    drop = false,
    stallAfter?: number | 'half',
    rewriteEtag = false,
  ) => {
    const upstreamReq = http.request(
      {
        agent,
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: upstream.host },
      },
      (upstreamRes) => {
        const chunks: Buffer[] = [];
        upstreamRes.on('data', (chunk: Buffer) => chunks.push(chunk));
        upstreamRes.on('end', () => {
          const body = Buffer.concat(chunks);
          if (drop) {
            res.socket?.destroy();
            return;
          }
          const headers = { ...upstreamRes.headers };
          delete headers['transfer-encoding'];
          if (rewriteEtag && headers.etag !== undefined)
            headers.etag = `"${randomBytes(16).toString('hex')}"`;
          if (stallAfter !== undefined) {
            // The whole length promised, part of it sent, then nothing: neither an end nor a reset.
            const sent =
              stallAfter === 'half' ? Math.floor(body.length / 2) : Math.min(stallAfter, body.length);
            headers['content-length'] = String(body.length);
            res.writeHead(upstreamRes.statusCode ?? 200, headers);
            res.flushHeaders();
            if (sent > 0) res.write(body.subarray(0, sent));
            if (res.socket) holdSilent(res.socket);
            return;
          }
          if (!truncate) {
            headers['content-length'] = String(body.length);
            res.writeHead(upstreamRes.statusCode ?? 502, headers);
            res.end(body);
            return;
          }
          // Promise more than is sent, send at most half, then close: the client must see a
          // short read, not a complete (empty) answer.
          const promised = Math.max(body.length, 64) + 64;
          headers['content-length'] = String(promised);
          res.writeHead(upstreamRes.statusCode ?? 200, headers);
          res.write(body.subarray(0, Math.floor(body.length / 2)), () => {
            res.socket?.destroy();
          });
        });
        upstreamRes.on('error', () => res.socket?.destroy());
      },
    );
    upstreamReq.on('error', () => res.socket?.destroy());
    req.pipe(upstreamReq);
  };

  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= new Promise<void>((resolve) => {
      for (const timer of timers) clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      agent.destroy();
      server.close(() => resolve());
    });
    return closed;
  };
  const lifetime = setTimeout(() => void close(), options.lifetimeMs ?? 10 * 60_000);
  lifetime.unref();

  return {
    port,
    url: `http://127.0.0.1:${port}`,
    requests,
    arm(rule) {
      rules.push({
        fault: rule.fault,
        delayMs: rule.delayMs ?? 500,
        bodyBytes: rule.bodyBytes,
        method: rule.method,
        path: rule.path,
        target: rule.target,
        error: rule.error,
        remaining: rule.count ?? 1,
      });
    },
    clear() {
      rules.length = 0;
    },
    count(outcome) {
      if (outcome === undefined || outcome === 'fault')
        return requests.filter((r) => r.outcome !== 'forwarded').length;
      return requests.filter((r) => r.outcome === outcome).length;
    },
    close: async () => {
      clearTimeout(lifetime);
      await close();
    },
  };
}

/** Reads (and discards) the request body before answering, as S3 does. */
function drainThen(req: http.IncomingMessage, answer: () => void): void {
  req.resume();
  req.on('end', answer);
  req.on('error', () => req.socket.destroy());
}

function s3Error(
  res: http.ServerResponse,
  status: number,
  code: string,
  message: string,
  resource: string | undefined,
): void {
  const body = Buffer.from(
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message>` +
      `<Resource>${escapeXml(resource ?? '/')}</Resource><RequestId>fault-proxy</RequestId></Error>`,
  );
  res.writeHead(status, { 'content-type': 'application/xml', 'content-length': String(body.length) });
  res.end(body);
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
