/**
 * PEM with exactly one block of the expected label. A second block, or text around it, is
 * refused rather than ignored: a file that carries two certificates must not be read as
 * whichever one a parser happens to take.
 */
export function pemEncode(label: string, der: Uint8Array): string {
  const b64 = Buffer.from(der).toString('base64');
  const lines = b64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

/**
 * THE BYTES AS WRITTEN, OR NOTHING: Go's pem.Encode and openssl write one armour — `-----BEGIN
 * L-----`, the base64 in lines of 64, `-----END L-----`, each line ended by one `\n` — and
 * the block is accepted only when re-encoding its DER gives back exactly those bytes. Anything
 * looser reads two different files as one key: base64 whose unused trailing bits are set, a
 * line wrapped elsewhere, whitespace around the armour or `\r` all decode to the same DER, so a
 * flipped byte in a published key would be adopted as different bytes that still pair.
 */
export function pemDecode(label: string, bytes: Uint8Array): Uint8Array | undefined {
  const text = Buffer.from(bytes).toString('latin1');
  const re = new RegExp(`^-----BEGIN ${label}-----\n([A-Za-z0-9+/=\n]+)-----END ${label}-----\n$`);
  const match = re.exec(text);
  if (!match) return undefined;
  const b64 = match[1]!.replace(/\n/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) return undefined;
  const der = Buffer.from(b64, 'base64');
  if (der.length === 0 || pemEncode(label, der) !== text) return undefined;
  return new Uint8Array(der);
}
