import { readFileSync } from 'node:fs';
import { invalid } from '../../core/errors.js';

/**
 * The rules every password chosen through Engram follows (docs/api.md): 10 to 1024 characters,
 * not the account's e-mail address, and not on the shipped list of common passwords.
 */
export const PASSWORD_MIN_LENGTH = 10;
export const PASSWORD_MAX_LENGTH = 1024;

let common: Set<string> | undefined;
function commonPasswords(): Set<string> {
  common ??= new Set(
    readFileSync(new URL('./common-passwords.txt', import.meta.url), 'utf8')
      .split('\n')
      .map((line) => line.trim().toLowerCase())
      .filter((line) => line && !line.startsWith('#')),
  );
  return common;
}

/** Throws a 400 naming `field` when the password breaks a rule. */
export function checkPassword(password: string, email: string, field: string): void {
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH)
    throw invalid(field, `The password must have at least ${PASSWORD_MIN_LENGTH} characters`);
  if (length > PASSWORD_MAX_LENGTH)
    throw invalid(field, `The password must have at most ${PASSWORD_MAX_LENGTH} characters`);
  const normalised = password.trim().toLowerCase();
  if (normalised === email.trim().toLowerCase()) throw invalid(field, 'The password must not be the e-mail address');
  if (commonPasswords().has(normalised))
    throw invalid(field, 'This password is on the list of common passwords; choose another');
}
