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

export function pemDecode(label: string, bytes: Uint8Array): Uint8Array | undefined {
  const text = Buffer.from(bytes).toString('latin1');
  const re = new RegExp(
    `^\\s*-----BEGIN ${label}-----\\r?\\n([A-Za-z0-9+/=\\r\\n]+)-----END ${label}-----\\s*$`,
  );
  const match = re.exec(text);
  if (!match) return undefined;
  const b64 = match[1]!.replace(/[\r\n]/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) return undefined;
  const der = Buffer.from(b64, 'base64');
  return der.length > 0 ? new Uint8Array(der) : undefined;
}
