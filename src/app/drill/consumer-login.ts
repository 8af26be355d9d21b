/**
 * What a consumer logs in with, read from its delivered file the way a consumer reads it: an
 * alternating pair's file names the login and its password (libpq keyword/value); a single
 * pair's file is the bare password of the pair's role. The drill's login checks go through
 * this, so they log in exactly as the consumer would.
 */
import { loginFileName, parseConninfo, slotOfLogin } from '../../mesh/alternating.js';
import { Secret } from '../../mesh/secret.js';

export interface ConsumerLogin {
  /** The role the consumer logs in as: the pair's role, or one of its alternating logins. */
  readonly login: string;
  readonly password: Secret;
  /** The provider-end file (under `provides/<provider>/`) whose receipt says the database has it. */
  readonly providerFile: string;
  readonly alternating: boolean;
}

export function consumerLoginOf(role: string, file: Secret): ConsumerLogin {
  const fields = parseConninfo(file.reveal());
  const slot =
    fields?.user !== undefined && fields.password !== undefined ? slotOfLogin(role, fields.user) : undefined;
  if (fields && slot)
    return {
      login: fields.user!,
      password: Secret.fromText(fields.password!),
      providerFile: loginFileName(role, slot),
      alternating: true,
    };
  return { login: role, password: file, providerFile: role, alternating: false };
}
