/**
 * A record another process wrote (a heartbeat, a census, a lock's holder), read through the
 * zod schema that states it: text that is not JSON, or JSON of another shape, is "no record",
 * never an exception — the caller then claims nothing from it.
 */
import type { z } from 'zod';

export function parseJsonRecord<T>(schema: z.ZodType<T>, text: string): T | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = schema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}
