/**
 * Does a stored document (any version, damaged or not) hold key material in the clear? A
 * scan, not the decoder: an old or half-written version the decoder refuses can still carry
 * `ca.key` as base64, and that is exactly what `store check` must find. Looks at the raw bytes
 * and at every string under `files`, base64-decoded.
 */
const PRIVATE_KEY = 'PRIVATE KEY';

/** The names of the files that hold a private key in the clear ('(raw)' when the bytes themselves do). */
export function clearKeyMaterial(body: Uint8Array): readonly string[] {
  const text = Buffer.from(body).toString('utf8');
  const found: string[] = [];
  if (text.includes(PRIVATE_KEY)) found.push('(raw)');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return found;
  }
  const files = (parsed as { files?: unknown } | null)?.files;
  if (typeof files !== 'object' || files === null) return found;
  for (const [name, value] of Object.entries(files)) {
    if (typeof value === 'string' && Buffer.from(value, 'base64').toString('latin1').includes(PRIVATE_KEY))
      found.push(name);
  }
  return found;
}
