/**
 * A strict DER reader: one TLV at a time, definite minimal lengths, single-byte tags, every
 * element exactly filling its parent. Strict because the bytes read here are the bytes that
 * are hashed (the fingerprint) and compared (issuer = subject): a lenient BER reader would let
 * two encodings of one certificate carry two different answers. Anything else is `undefined`,
 * never a guess.
 */
export interface DerElement {
  readonly tag: number;
  /** The whole element, header included (what a fingerprint or a name comparison reads). */
  readonly bytes: Uint8Array;
  /** The content octets. */
  readonly content: Uint8Array;
}

export const TAG = {
  boolean: 0x01,
  integer: 0x02,
  bitString: 0x03,
  octetString: 0x04,
  oid: 0x06,
  utf8String: 0x0c,
  numericString: 0x12,
  printableString: 0x13,
  teletexString: 0x14,
  ia5String: 0x16,
  utcTime: 0x17,
  generalizedTime: 0x18,
  visibleString: 0x1a,
  universalString: 0x1c,
  bmpString: 0x1e,
  sequence: 0x30,
  set: 0x31,
} as const;

/** The one element `bytes` holds, with nothing after it. */
export function derRead(bytes: Uint8Array): DerElement | undefined {
  const element = readAt(bytes, 0);
  return element && element.bytes.length === bytes.length ? element : undefined;
}

/** The elements a constructed element's content holds, back to back, filling it exactly. */
export function derChildren(element: DerElement): DerElement[] | undefined {
  if ((element.tag & 0x20) === 0) return undefined;
  const out: DerElement[] = [];
  let offset = 0;
  while (offset < element.content.length) {
    const child = readAt(element.content, offset);
    if (!child) return undefined;
    out.push(child);
    offset += child.bytes.length;
  }
  return out;
}

function readAt(bytes: Uint8Array, start: number): DerElement | undefined {
  if (start + 2 > bytes.length) return undefined;
  const tag = bytes[start]!;
  // High-tag-number form: no certificate field baton reads uses one.
  if ((tag & 0x1f) === 0x1f) return undefined;
  let length = bytes[start + 1]!;
  let header = 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    // 0x80 is BER's indefinite length; more than 4 length octets is no certificate.
    if (count === 0 || count > 4 || start + 2 + count > bytes.length) return undefined;
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + bytes[start + 2 + i]!;
    // Minimal: the long form only from 128, and no leading zero octet.
    if (length < 0x80 || bytes[start + 2] === 0) return undefined;
    header += count;
  }
  const end = start + header + length;
  if (end > bytes.length) return undefined;
  return { tag, bytes: bytes.subarray(start, end), content: bytes.subarray(start + header, end) };
}

/** Dotted OID text, or undefined for a non-minimal or truncated encoding. */
export function derOid(element: DerElement): string | undefined {
  const c = element.content;
  if (element.tag !== TAG.oid || c.length === 0 || (c[c.length - 1]! & 0x80) !== 0) return undefined;
  const arcs: number[] = [];
  let value = 0;
  let first = true;
  for (let i = 0; i < c.length; i++) {
    const byte = c[i]!;
    // A leading 0x80 octet would be a second encoding of the same arc.
    if (value === 0 && byte === 0x80) return undefined;
    value = value * 128 + (byte & 0x7f);
    if (value > Number.MAX_SAFE_INTEGER / 128) return undefined;
    if (byte & 0x80) continue;
    if (first) {
      const top = value < 80 ? Math.floor(value / 40) : 2;
      arcs.push(top, value - top * 40);
      first = false;
    } else arcs.push(value);
    value = 0;
  }
  return arcs.join('.');
}

/** A DER BOOLEAN: exactly one octet, 0x00 or 0xFF. */
export function derBoolean(element: DerElement): boolean | undefined {
  if (element.tag !== TAG.boolean || element.content.length !== 1) return undefined;
  const byte = element.content[0];
  return byte === 0xff ? true : byte === 0x00 ? false : undefined;
}

/** A DER INTEGER's content octets (two's complement, minimal), or undefined. */
export function derInteger(element: DerElement): Uint8Array | undefined {
  const c = element.content;
  if (element.tag !== TAG.integer || c.length === 0) return undefined;
  if (c.length > 1 && ((c[0] === 0x00 && (c[1]! & 0x80) === 0) || (c[0] === 0xff && (c[1]! & 0x80) !== 0)))
    return undefined;
  return c;
}

/** A BIT STRING's bits (unused trailing bits zeroed by the encoder), or undefined. */
export function derBitString(element: DerElement): Uint8Array | undefined {
  const c = element.content;
  if (element.tag !== TAG.bitString || c.length === 0) return undefined;
  const unused = c[0]!;
  if (unused > 7 || (c.length === 1 && unused !== 0)) return undefined;
  return c.subarray(1);
}

/**
 * UTCTime `YYMMDDHHMMSSZ` or GeneralizedTime `YYYYMMDDHHMMSSZ`, the only forms RFC 5280
 * §4.1.2.5 allows (seconds present, Zulu, no fraction). UTCTime years 50–99 are 19xx.
 */
export function derTime(element: DerElement): Date | undefined {
  const text = Buffer.from(element.content).toString('latin1');
  const match =
    element.tag === TAG.utcTime
      ? /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(text)
      : element.tag === TAG.generalizedTime
        ? /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(text)
        : null;
  if (!match) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const fullYear = element.tag === TAG.utcTime ? (year >= 50 ? 1900 + year : 2000 + year) : year;
  const date = new Date(Date.UTC(fullYear, month - 1, day, hour, minute, second));
  // Date.UTC rolls 31 February into March: a field out of range must not become another instant.
  const valid =
    date.getUTCFullYear() === fullYear &&
    date.getUTCMonth() === month - 1 &&
    date.getUTCDate() === day &&
    date.getUTCHours() === hour &&
    date.getUTCMinutes() === minute &&
    date.getUTCSeconds() === second;
  return valid ? date : undefined;
}

/**
 * The text of a directory string, decoded by its own tag. A value of any other type reads as
 * "" — never a deployment id, so a certificate carrying one is refused, not guessed at.
 */
export function derString(element: DerElement): string {
  const c = Buffer.from(element.content);
  switch (element.tag) {
    case TAG.utf8String:
      return c.toString('utf8');
    case TAG.printableString:
    case TAG.ia5String:
    case TAG.visibleString:
    case TAG.numericString:
    case TAG.teletexString:
      return c.toString('latin1');
    case TAG.bmpString:
      return c.length % 2 === 0 ? Buffer.from(c).swap16().toString('utf16le') : '';
    case TAG.universalString: {
      if (c.length % 4 !== 0) return '';
      let text = '';
      for (let i = 0; i < c.length; i += 4) {
        const point = c.readUInt32BE(i);
        if (point > 0x10ffff) return '';
        text += String.fromCodePoint(point);
      }
      return text;
    }
    default:
      return '';
  }
}
