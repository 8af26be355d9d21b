/**
 * Output to a closed pipe (`baton mesh plan | head -3`): Node reports EPIPE as an 'error' event
 * on stdout, which unhandled ends the process with a stack trace — in the middle of a rotation,
 * after a provider commit. Here the lines that no one reads any more are dropped and the
 * command carries on to its own end: a rotation still finishes or rolls back each pair (both
 * all or nothing, and the journal records which), which is safer than stopping half-way.
 */
export function keepGoingWhenOutputCloses(stream: NodeJS.WritableStream): { readonly closed: () => boolean } {
  let closed = false;
  const onError = (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') closed = true;
    else throw error;
  };
  if (!stream.listeners('error').some((l) => (l as { batonClosedOutput?: boolean }).batonClosedOutput)) {
    Object.assign(onError, { batonClosedOutput: true });
    stream.on('error', onError);
  }
  return { closed: () => closed };
}
