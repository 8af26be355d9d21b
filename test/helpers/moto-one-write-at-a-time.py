"""moto_server, with each state-changing request applied whole before the next one starts.

Why: moto 5.2 checks a PUT's If-Match / If-None-Match and then writes the object as two steps,
under werkzeug's threaded server and with no lock, so two concurrent conditional PUTs of one key
can both pass the check and both write. S3 itself applies a conditional write atomically (the
loser gets 412, or 409 ConditionalRequestConflict), and baton's "never two successes" rests on
that. Round 10's CI saw moto let two concurrent pushes through (test/integration/
s3-preconditions-moto.test.ts). This gives moto the atomicity S3 has and nothing else: reads stay
concurrent, a request's body is read in full BEFORE the lock is taken (a client that stalls while
sending cannot hold up anyone else), and moto's own code decides every answer.

Usage: python3 moto-one-write-at-a-time.py HOST PORT
With BATON_MOTO_EXIT_WITH_PID set, the server exits once that process is gone: the suite's one
moto for a run (test/helpers/moto-run.ts) is detached from the worker that started it, and a run
killed before its teardown must not leave it running.
"""

import io
import os
import signal
import sys
import threading
import time

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple

READS = frozenset(("GET", "HEAD", "OPTIONS"))


def one_write_at_a_time(app):
    lock = threading.Lock()

    def serve(environ, start_response):
        if environ.get("REQUEST_METHOD") in READS:
            return app(environ, start_response)
        # A chunked body ends where werkzeug says (input_terminated); any other has its length,
        # or none at all: reading to EOF there would wait on the kept-alive socket for ever.
        stream = environ["wsgi.input"]
        length = environ.get("CONTENT_LENGTH")
        if environ.get("wsgi.input_terminated"):
            body = stream.read()
        elif length:
            body = stream.read(int(length))
        else:
            body = b""
        environ["wsgi.input"] = io.BytesIO(body)
        with lock:
            answer = app(environ, start_response)
            try:
                whole = b"".join(answer)
            finally:
                close = getattr(answer, "close", None)
                if close is not None:
                    close()
        return [whole]

    return serve


def exit_with(pid):
    def watch():
        while True:
            time.sleep(1)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                os._exit(0)
            except PermissionError:
                pass

    threading.Thread(target=watch, daemon=True).start()


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    os.environ.setdefault("MOTO_PORT", str(port))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
    watched = os.environ.get("BATON_MOTO_EXIT_WITH_PID")
    if watched:
        exit_with(int(watched))
    app = DomainDispatcherApplication(create_backend_app)
    app.debug = True
    run_simple(host, port, one_write_at_a_time(app), threaded=True)


if __name__ == "__main__":
    main()
