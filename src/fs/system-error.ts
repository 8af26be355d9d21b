/**
 * How baton tells an operating-system failure (ENOSPC, EEXIST, EACCES…) from a bug, and names
 * it in a message: the code the operator can look up, never a stack.
 */

/** An error from the operating system, as opposed to a bug. */
export function isSystemError(error: unknown): error is NodeJS.ErrnoException {
  return (
    error instanceof Error &&
    typeof (error as NodeJS.ErrnoException).code === 'string' &&
    typeof (error as NodeJS.ErrnoException).syscall === 'string'
  );
}

/** `ENOENT`, `EACCES`…, or the error's text when it carries no code. */
export function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException | undefined)?.code ?? String(error);
}
